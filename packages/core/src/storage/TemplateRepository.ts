import type { Effect, Option } from "effect"
import type { OrganizationId } from "../model/organizations.js"
import type { Page, PageRequest } from "../model/common.js"
import type { Template, TemplateCategory, TemplateContent, TemplateId, TemplateStatus } from "../model/templates.js"
import type { StorageError } from "./errors.js"

/**
 * Outcome of creating or updating a template. `NotFound` and `NameTaken` wrote nothing;
 * nor did `Stale`: an update guarded by {@link TemplateWriteGuard} found the template
 * changed after `unchangedSince` (`template`, as it is).
 *
 * @category storage
 */
export type TemplateWriteOutcome =
  | { readonly _tag: "Written"; readonly template: Template }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "NameTaken" }
  | { readonly _tag: "Stale"; readonly template: Template }

/**
 * A compare-and-set guard of a template write (the template sync's,
 * docs/templates-and-replies.md "The sync"): `unchangedSince`, an ISO 8601 instant; the
 * write happens only while the template's `updated_at` is not later, checked in the same
 * atomic step as the write. Absent: no guard.
 *
 * @category storage
 */
export interface TemplateWriteGuard {
  readonly unchangedSince?: string
}

/**
 * Input of {@link TemplateRepository.updateStatus}: the review status Meta reported and its
 * reason (`rejected_reason`, `null` when none), docs/whatsapp-webhooks.md "Template statuses".
 *
 * @category storage
 */
export interface TemplateStatusUpdate extends TemplateWriteGuard {
  readonly status: TemplateStatus
  readonly rejected_reason: string | null
  /** The category Meta gave it (a `template_category_update`); absent: unchanged. */
  readonly category?: TemplateCategory
  readonly now: string
}

/**
 * Outcome of {@link TemplateRepository.updateStatus}: the template afterwards and whether
 * anything changed (when both fields already had their values nothing is written,
 * `updated_at` included), `NotFound`, or `Stale` (the update's `unchangedSince` guard
 * found the template changed later: nothing written, `template` as it is).
 *
 * @category storage
 */
export type TemplateStatusOutcome =
  | { readonly _tag: "Updated"; readonly template: Template; readonly changed: boolean }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "Stale"; readonly template: Template }

/**
 * Content of {@link TemplateRepository.create} and {@link TemplateRepository.update}:
 * the template's content, and optionally `rejected_reason` (Meta's, for a template from
 * Meta); absent, the repository's rule for it applies.
 *
 * @category storage
 */
export type TemplateWrite = TemplateContent & { readonly rejected_reason?: string | null }

/**
 * Message templates of one organization (docs/templates-and-replies.md). A template is
 * identified by its WhatsApp Business Account (`waba_id`, `null` for a template written
 * by hand or imported: `null` is a group of its own, equal to itself), its name, compared
 * with `nameKey` (trimmed, lowercase), and its language code, compared exactly: that
 * triple is unique per organization, enforced by the store in the same atomic step as the
 * write. `components` and `problems` are stored and returned as given (plain JSON: for a
 * template from Meta with problems, whatever Meta gave). Every method takes the
 * organization id first and never sees another organization's templates; each fails
 * only with {@link StorageError}.
 *
 * @category storage
 */
export interface TemplateRepository {
  /**
   * Inserts a template (`created_at` = `updated_at` = `now`, `rejected_reason` as given,
   * else `null`); `NameTaken` when the identity is used.
   */
  readonly create: (
    organizationId: OrganizationId,
    template: { readonly uuid: TemplateId; readonly content: TemplateWrite; readonly now: string }
  ) => Effect.Effect<TemplateWriteOutcome, StorageError>
  /**
   * Replaces a template's content (its `waba_id`, `provider_template_id` and `problems`
   * included) and sets `updated_at`; `rejected_reason` is the one given, else kept when
   * the new status is `REJECTED` and cleared to `null` otherwise. `NotFound` when the
   * organization has no such template, `Stale` when `guard.unchangedSince` is given and
   * the template's `updated_at` is later, `NameTaken` when another of its templates has
   * the new identity.
   */
  readonly update: (
    organizationId: OrganizationId,
    id: TemplateId,
    content: TemplateWrite,
    now: string,
    guard?: TemplateWriteGuard
  ) => Effect.Effect<TemplateWriteOutcome, StorageError>
  /**
   * Sets `status` and `rejected_reason` of a template (and `category` when given), and
   * `updated_at` = `now` when any differs, atomically (a template status or category update
   * from the provider); with `unchangedSince`, only while the template's `updated_at` is not
   * later (else `Stale`, checked before the comparison of the fields). A change records the
   * event `template.category_updated` when `category` was given, else
   * `template.status_updated`.
   */
  readonly updateStatus: (
    organizationId: OrganizationId,
    id: TemplateId,
    update: TemplateStatusUpdate
  ) => Effect.Effect<TemplateStatusOutcome, StorageError>
  /**
   * Removes a template that Meta never gave an id (`provider_template_id` `null`): the
   * local row `POST /templates` writes before calling Meta, when Meta refuses the
   * submission (docs/templates-and-replies.md "Submitting and deleting"). `true` when it
   * was removed; `false` when the organization has no such template or it has a Meta id
   * (nothing removed: a template from Meta is only ever marked `DELETED`).
   */
  readonly deleteUnsubmitted: (organizationId: OrganizationId, id: TemplateId) => Effect.Effect<boolean, StorageError>
  /** The template with this uuid. */
  readonly findById: (
    organizationId: OrganizationId,
    id: TemplateId
  ) => Effect.Effect<Option.Option<Template>, StorageError>
  /**
   * The template a send through an account of `wabaId` uses: the one with this name (by
   * `nameKey`) and exactly this language code of that WhatsApp Business Account when it
   * has one, else the one with no account (`waba_id` `null`). `wabaId` `null` (or
   * absent): only a template with no account.
   */
  readonly findByIdentity: (
    organizationId: OrganizationId,
    name: string,
    language: string,
    wabaId?: string | null
  ) => Effect.Effect<Option.Option<Template>, StorageError>
  /** The template with Meta's id `providerTemplateId` (the oldest, should several have it). */
  readonly findByProviderId: (
    organizationId: OrganizationId,
    providerTemplateId: string
  ) => Effect.Effect<Option.Option<Template>, StorageError>
  /** One page of templates, newest first (`created_at desc, uuid desc`), with the total. */
  readonly list: (organizationId: OrganizationId, page: PageRequest) => Effect.Effect<Page<Template>, StorageError>
}
