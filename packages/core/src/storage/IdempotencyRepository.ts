import type { Effect } from "effect"
import type { OrganizationId } from "../model/organizations.js"
import type { StorageError } from "./errors.js"

/**
 * What {@link IdempotencyRepository.claim} is asked to record: the request's fingerprint,
 * `resourceUuid` (a fresh uuid for what the request creates, for example its message; kept
 * in the record as `resource_uuid` when this claim writes the record) and three ISO 8601
 * UTC instants (`now`; `lockedUntil`, when an unfinished claim may be taken over;
 * `expiresAt`, when the record is forgotten).
 *
 * @category storage
 */
export interface IdempotencyClaimRequest {
  readonly key: string
  readonly fingerprint: string
  readonly resourceUuid: string
  readonly now: string
  readonly lockedUntil: string
  readonly expiresAt: string
}

/**
 * Outcome of a claim (docs/messaging.md "Idempotency-Key"):
 * - `Claimed`: the caller now holds the key, with `resourceUuid`, the uuid the record
 *   holds for what the request creates. Either no record existed or the record had expired
 *   (`takeover: false`, `resourceUuid` the request's own, now stored), or an unfinished
 *   claim with the same fingerprint had passed its `locked_until` (its process died) and
 *   was taken over (`takeover: true`, `resourceUuid` the FIRST claimant's, so the caller
 *   answers what that one created instead of creating it again; a record written without
 *   a uuid, before stores kept one, gets the request's);
 * - `Completed`: a finished request with this key and fingerprint, with its stored HTTP
 *   `status` and `body` (the envelope's JSON text);
 * - `InProgress`: a request with this key and fingerprint holds it still;
 * - `FingerprintMismatch`: the key was used for another request.
 *
 * @category storage
 */
export type IdempotencyClaimOutcome =
  | { readonly _tag: "Claimed"; readonly resourceUuid: string; readonly takeover: boolean }
  | { readonly _tag: "Completed"; readonly status: number; readonly body: string }
  | { readonly _tag: "InProgress" }
  | { readonly _tag: "FingerprintMismatch" }

/**
 * Idempotency keys of one organization (docs/messaging.md "Idempotency-Key"). A key is
 * unique per organization; `claim` is one atomic insert-if-absent in the store, so two
 * processes sharing a database can never both hold a key. Records whose `expires_at` has
 * passed count as absent and are deleted by `prune`. Every method fails only with
 * {@link StorageError}.
 *
 * @category storage
 */
export interface IdempotencyRepository {
  /** Claims `request.key` atomically; see {@link IdempotencyClaimOutcome}. */
  readonly claim: (
    organizationId: OrganizationId,
    request: IdempotencyClaimRequest
  ) => Effect.Effect<IdempotencyClaimOutcome, StorageError>
  /** Stores the finished request's HTTP `status` and `body` on the claimed key. */
  readonly complete: (
    organizationId: OrganizationId,
    key: string,
    response: { readonly status: number; readonly body: string; readonly now: string }
  ) => Effect.Effect<void, StorageError>
  /** Deletes a claimed key that was not completed, so the client may retry with it. */
  readonly release: (organizationId: OrganizationId, key: string) => Effect.Effect<void, StorageError>
  /** Deletes every record (of every organization) whose `expires_at` is at or before `now`; returns how many. */
  readonly prune: (now: string) => Effect.Effect<number, StorageError>
}
