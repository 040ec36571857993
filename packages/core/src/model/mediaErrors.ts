import { Schema } from "effect"

// The refusals of the media routes (docs/media.md); the http-adapter maps each to its status.

/**
 * The bytes are not a type media may have, or not the type declared (`file-type` read
 * them): HTTP 400 `unsupported_media_type`. `reason` says which, in words.
 *
 * @category errors
 */
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", {
  reason: Schema.String
}) {
  override get message(): string {
    return this.reason
  }
}

/**
 * The file is larger than its type allows (`maxBytes`, docs/media.md "Types and limits"):
 * HTTP 413 `payload_too_large`.
 *
 * @category errors
 */
export class MediaTooLarge extends Schema.TaggedError<MediaTooLarge>()("MediaTooLarge", {
  mime_type: Schema.String,
  maxBytes: Schema.Number
}) {
  override get message(): string {
    return `A ${this.mime_type} file may hold at most ${this.maxBytes} bytes`
  }
}

/**
 * The media's bytes are not there yet (`pending`): HTTP 409 `media_not_ready`.
 *
 * @category errors
 */
export class MediaNotReady extends Schema.TaggedError<MediaNotReady>()("MediaNotReady", { uuid: Schema.String }) {
  override get message(): string {
    return `Media ${this.uuid} is not stored yet`
  }
}

/**
 * The media's bytes will never be served: it `failed` or was `deleted`. HTTP 410
 * `media_unavailable`.
 *
 * @category errors
 */
export class MediaUnavailable extends Schema.TaggedError<MediaUnavailable>()("MediaUnavailable", {
  uuid: Schema.String,
  status: Schema.Literal("failed", "deleted")
}) {
  override get message(): string {
    return `Media ${this.uuid} is ${this.status}: its bytes are not available`
  }
}

/**
 * A `Range` outside the file (`size` bytes): HTTP 416 `range_not_satisfiable` with
 * `Content-Range: bytes *\/size`.
 *
 * @category errors
 */
export class RangeNotSatisfiable extends Schema.TaggedError<RangeNotSatisfiable>()("RangeNotSatisfiable", {
  size: Schema.Number
}) {
  override get message(): string {
    return `The range is outside the file's ${this.size} bytes`
  }
}

/**
 * A signed media link that does not verify (`invalid_signature`) or is past its time
 * (`link_expired`): HTTP 403 with that code.
 *
 * @category errors
 */
export class MediaLinkRefused extends Schema.TaggedError<MediaLinkRefused>()("MediaLinkRefused", {
  code: Schema.Literal("invalid_signature", "link_expired")
}) {
  override get message(): string {
    return this.code === "link_expired" ? "The media link has expired" : "The media link's signature is not valid"
  }
}
