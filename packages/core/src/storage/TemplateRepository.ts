import type { Effect, Option } from "effect"
import type { OrganizationId } from "../organizations/model.js"
import type { Page, PageRequest } from "../common/model.js"
import type { Template, TemplateContent, TemplateId } from "../templates/model.js"
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
  /** Inserts a template (`created_at` = `updated_at` = `now`); `NameTaken` when the identity is used. */
  readonly create: (
    organizationId: OrganizationId,
    template: { readonly uuid: TemplateId; readonly content: TemplateContent; readonly now: string }
  ) => Effect.Effect<TemplateWriteOutcome, StorageError>
  /**
   * Replaces a template's content and sets `updated_at`; `NotFound` when the organization
   * has no such template, `NameTaken` when another of its templates has the new identity.
   */
  readonly update: (
    organizationId: OrganizationId,
    id: TemplateId,
    content: TemplateContent,
    now: string
  ) => Effect.Effect<TemplateWriteOutcome, StorageError>
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
