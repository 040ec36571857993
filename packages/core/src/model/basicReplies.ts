import { Schema } from "effect"

/**
 * Identifier of a basic reply.
 *
 * @category models
 */
export const BasicReplyId = Schema.UUID.pipe(Schema.brand("BasicReplyId"))
/** @category models */
export type BasicReplyId = typeof BasicReplyId.Type

/**
 * A basic (canned) reply (docs/templates-and-replies.md "Basic replies"): `name` and `trigger` trimmed,
 * 1–255 characters; `response` trimmed, 1–4096 characters. The trigger is unique per
 * organization, case-insensitively; an inbound message whose trimmed text equals it,
 * ignoring case, is answered with `response`.
 *
 * @category models
 */
export const BasicReply = Schema.Struct({
  uuid: BasicReplyId,
  name: Schema.String,
  trigger: Schema.String,
  response: Schema.String,
  created_at: Schema.String,
  updated_at: Schema.String
})
/** @category models */
export type BasicReply = typeof BasicReply.Type

/**
 * Input of `BasicReplies.create` (`POST /basic-replies`, docs/templates-and-replies.md "Basic replies"): every field required.
 * Values are checked at run time, so a value of another type is a 400, not a crash.
 *
 * @category models
 */
export interface BasicReplyInput {
  readonly name: string
  readonly trigger: string
  readonly response: string
}

/**
 * Longest reply `response`, in characters (docs/templates-and-replies.md "Basic replies").
 *
 * @category models
 */
export const MAX_RESPONSE_LENGTH = 4096
