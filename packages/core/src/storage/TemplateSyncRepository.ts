import type { Effect, Option } from "effect"
import type { OrganizationId } from "../model/organizations.js"
import type { TemplateSync, TemplateSyncOutcome } from "../model/templateSyncs.js"
import type { StorageError } from "./errors.js"

/**
 * Input of {@link TemplateSyncRepository.claim}: `now` and `leaseUntil` ISO 8601 UTC
 * instants, `lease` a new token every claimed record is leased under, `limit` the most
 * records to claim.
 *
 * @category storage
 */
export interface TemplateSyncClaim {
  readonly now: string
  readonly lease: string
  readonly leaseUntil: string
  readonly limit: number
}

/**
 * What {@link TemplateSyncRepository.record} writes of a run: when the next is due, when
 * this one ran, and its outcome or error (ISO 8601 instants).
 *
 * @category storage
 */
export interface TemplateSyncResult {
  readonly next_due_at: string
  readonly last_run_at: string
  readonly last_outcome: TemplateSyncOutcome | null
  readonly last_error: string | null
}

/**
 * The template sync records (docs/templates-and-replies.md "Templates from Meta"): one per
 * organization and WhatsApp Business Account (`waba_id`), read by the loop that syncs
 * templates from Meta. Adding a channel creates its account's record due at the channel's
 * `created_at` in the same atomic step as the channel (`ChannelRepository.insert`).
 * Every method is one atomic step and fails only with {@link StorageError}; claims are
 * exclusive across every process sharing the store.
 *
 * @category storage
 */
export interface TemplateSyncRepository {
  /**
   * The account's record due at `dueAt`: created when missing (never run, no lease); an
   * existing one whose `next_due_at` is later is brought forward to `dueAt` (its lease and
   * last run kept).
   */
  readonly ensureDue: (organizationId: OrganizationId, wabaId: string, dueAt: string) => Effect.Effect<void, StorageError>
  /**
   * Leases up to `limit` records due at `now` (`next_due_at` ≤ `now`, with no lease or
   * one ended by `now`), earliest due first, each under `lease` until `leaseUntil`: of
   * several claims at once, each record goes to one. The records as leased.
   */
  readonly claim: (request: TemplateSyncClaim) => Effect.Effect<ReadonlyArray<TemplateSync>, StorageError>
  /**
   * Leases this organization's account's record under `lease` until `leaseUntil`, due or
   * not, when no lease holds it at `now` (none, or one ended by then): `true`; else, or
   * when there is no record, `false` (nothing written). A sync asked for by hand runs
   * under it (`POST /channels/{uuid}/templates/sync`).
   */
  readonly claimAccount: (
    organizationId: OrganizationId,
    wabaId: string,
    request: Omit<TemplateSyncClaim, "limit">
  ) => Effect.Effect<boolean, StorageError>
  /** Extends a record's lease to `leaseUntil` while `lease` still holds it: `true`, else `false` (nothing written). */
  readonly renew: (
    organizationId: OrganizationId,
    wabaId: string,
    lease: string,
    leaseUntil: string
  ) => Effect.Effect<boolean, StorageError>
  /**
   * Writes a run's result and releases the lease, only while `lease` still holds the
   * record: `true`, else `false` (another claim took it, or the record is gone: nothing
   * written).
   */
  readonly record: (
    organizationId: OrganizationId,
    wabaId: string,
    lease: string,
    result: TemplateSyncResult
  ) => Effect.Effect<boolean, StorageError>
  /** The record of this organization and account. */
  readonly get: (organizationId: OrganizationId, wabaId: string) => Effect.Effect<Option.Option<TemplateSync>, StorageError>
  /**
   * When the next record becomes claimable, of every organization: the earliest
   * `next_due_at`, a leased record counting from its lease's end when that is later;
   * `None` when there is no record.
   */
  readonly nextDueAt: () => Effect.Effect<Option.Option<string>, StorageError>
}
