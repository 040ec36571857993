import { Schema } from "effect"
import { BroadcastStatus } from "./broadcasts.js"

/**
 * `POST /broadcasts` whose audience holds no contact now (docs/broadcasts.md "The
 * audience"). HTTP 400 `empty_audience`; nothing written.
 *
 * @category errors
 */
export class EmptyAudience extends Schema.TaggedError<EmptyAudience>()("EmptyAudience", {}) {
  override get message(): string {
    return "The audience holds no contact: name groups, labels or contacts that have some"
  }
}

/**
 * `POST /broadcasts` whose audience holds more than `limit` contacts (`size`). HTTP 400
 * `audience_too_large`; nothing written.
 *
 * @category errors
 */
export class AudienceTooLarge extends Schema.TaggedError<AudienceTooLarge>()("AudienceTooLarge", {
  size: Schema.Int,
  limit: Schema.Int
}) {
  override get message(): string {
    return `The audience holds ${this.size} contacts; a broadcast reaches at most ${this.limit}`
  }
}

/**
 * `POST /broadcasts/{uuid}/cancel` of a broadcast that already ended (`status` is its
 * state: `completed`, `cancelled` or `stopped`). HTTP 409 `broadcast_not_cancellable`.
 *
 * @category errors
 */
export class BroadcastNotCancellable extends Schema.TaggedError<BroadcastNotCancellable>()("BroadcastNotCancellable", {
  broadcast_uuid: Schema.String,
  status: BroadcastStatus
}) {
  override get message(): string {
    return `Broadcast ${this.broadcast_uuid} is ${this.status}: only a scheduled or sending broadcast can be cancelled`
  }
}
