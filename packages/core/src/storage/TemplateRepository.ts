import type { Effect, Option } from "effect"
import type { OrganizationId } from "../model/organizations.js"
import type { Page, PageRequest } from "../model/common.js"
import type { Template, TemplateContent, TemplateId, TemplateStatus } from "../model/templates.js"
import type { StorageError } from "./errors.js"

/**
 * Outcome of creating or updating a template. `NotFound` and `NameTaken` wrote nothing.
 *
 * @category storage
 */
export type TemplateWriteOutcome =
  | { readonly _tag: "Written"; readonly template: Template }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "NameTaken" }

/**
 * Input of {@link TemplateRepository.updateStatus}: the review status Meta reported and its
 * reason (`rejected_reason`, `null` when none), docs/whatsapp-webhooks.md "Template statuses".
 *
 * @category storage
 */
export interface TemplateStatusUpdate {
  readonly status: TemplateStatus
  readonly rejected_reason: string | null
  readonly now: string
}

/**
 * Outcome of {@link TemplateRepository.updateStatus}: the template afterwards and whether
 * anything changed (when both fields already had their values nothing is written,
 * `updated_at` included), or `NotFound`.
 *
 * @category storage
 */
export type TemplateStatusOutcome =
  | { readonly _tag: "Updated"; readonly template: Template; readonly changed: boolean }
  | { readonly _tag: "NotFound" }

/**
 * Message templates of one organization (docs/templates-and-replies.md). A template is
 * identified by its name, compared with `nameKey` (trimmed, lowercase), together with its
 * language code, compared exactly: that pair is unique per organization, enforced by the
 * store in the same atomic step as the write. `components` are stored and returned as
 * given (plain JSON). Every method takes the organization id first and never sees another
 * organization's templates; each fails only with {@link StorageError}.
 *
 * @category storage
 */
export interface TemplateRepository {
  /**
   * Inserts a template (`created_at` = `updated_at` = `now`, `rejected_reason` `null`);
   * `NameTaken` when the identity is used.
   */
  readonly create: (
    organizationId: OrganizationId,
    template: { readonly uuid: TemplateId; readonly content: TemplateContent; readonly now: string }
  ) => Effect.Effect<TemplateWriteOutcome, StorageError>
  /**
   * Replaces a template's content and sets `updated_at`; `rejected_reason` is kept when the
   * new status is `REJECTED`, else cleared to `null`. `NotFound` when the organization
   * has no such template, `NameTaken` when another of its templates has the new identity.
   */
  readonly update: (
    organizationId: OrganizationId,
    id: TemplateId,
    content: TemplateContent,
    now: string
  ) => Effect.Effect<TemplateWriteOutcome, StorageError>
  /**
   * Sets `status` and `rejected_reason` of a template, and `updated_at` = `now` when either
   * differs, atomically (a template status update from the provider).
   */
  readonly updateStatus: (
    organizationId: OrganizationId,
    id: TemplateId,
    update: TemplateStatusUpdate
  ) => Effect.Effect<TemplateStatusOutcome, StorageError>
  /** The template with this uuid. */
  readonly findById: (
    organizationId: OrganizationId,
    id: TemplateId
  ) => Effect.Effect<Option.Option<Template>, StorageError>
  /** The template with this name (by `nameKey`) and exactly this language code. */
  readonly findByIdentity: (
    organizationId: OrganizationId,
    name: string,
    language: string
  ) => Effect.Effect<Option.Option<Template>, StorageError>
  /** One page of templates, newest first (`created_at desc, uuid desc`), with the total. */
  readonly list: (organizationId: OrganizationId, page: PageRequest) => Effect.Effect<Page<Template>, StorageError>
}
