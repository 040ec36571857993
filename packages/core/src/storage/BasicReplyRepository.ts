import type { Effect, Option } from "effect"
import type { BasicReply, BasicReplyId } from "../model/basicReplies.js"
import type { OrganizationId } from "../model/organizations.js"
import type { Page, PageRequest } from "../model/common.js"
import type { StorageError } from "./errors.js"

/**
 * Outcome of creating a basic reply. `TriggerTaken` wrote nothing.
 *
 * @category storage
 */
export type BasicReplyCreateOutcome =
  | { readonly _tag: "Created"; readonly reply: BasicReply }
  | { readonly _tag: "TriggerTaken" }

/**
 * Basic (canned) replies of one organization (`/basic-replies`, docs/templates-and-replies.md "Basic replies"). Triggers are
 * unique per organization, compared with `nameKey` (trimmed, lowercase), enforced by the
 * store in the same atomic step as the insert (docs/templates-and-replies.md "Basic replies"). Every method
 * takes the organization id first and never sees another organization's replies;
 * each fails only with {@link StorageError}.
 *
 * @category storage
 */
export interface BasicReplyRepository {
  /** Inserts a reply (`created_at` = `updated_at` = `now`); `TriggerTaken` when the trigger is used. */
  readonly create: (
    organizationId: OrganizationId,
    reply: {
      readonly uuid: BasicReplyId
      readonly name: string
      readonly trigger: string
      readonly response: string
      readonly now: string
    }
  ) => Effect.Effect<BasicReplyCreateOutcome, StorageError>
  /** The reply with this uuid. */
  readonly findById: (
    organizationId: OrganizationId,
    id: BasicReplyId
  ) => Effect.Effect<Option.Option<BasicReply>, StorageError>
  /** The reply whose trigger matches `text` by `nameKey` (trimmed, case-insensitive). */
  readonly findByTrigger: (
    organizationId: OrganizationId,
    text: string
  ) => Effect.Effect<Option.Option<BasicReply>, StorageError>
  /** One page of replies, newest first (`created_at desc, uuid desc`), with the total. */
  readonly list: (organizationId: OrganizationId, page: PageRequest) => Effect.Effect<Page<BasicReply>, StorageError>
}
