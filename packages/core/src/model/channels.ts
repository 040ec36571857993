import { Schema } from "effect"
import type { OrganizationId } from "./organizations.js"

/**
 * Identifier of a channel.
 *
 * @category models
 */
export const ChannelId = Schema.UUID.pipe(Schema.brand("ChannelId"))
/** @category models */
export type ChannelId = typeof ChannelId.Type

/**
 * Whether the send queue hands a channel's messages to Meta (`active`) or holds them
 * (`paused`, docs/channels.md "Pause and resume").
 *
 * @category models
 */
export const ChannelStatus = Schema.Literal("active", "paused")
/** @category models */
export type ChannelStatus = typeof ChannelStatus.Type

/**
 * An organization's own WhatsApp Business number (docs/channels.md): Meta's
 * `phone_number_id` (unique across all organizations), the number in E.164, the WhatsApp
 * Business Account id `waba_id`, the last four characters of its access token, and
 * `throughput_mps`, the most messages per second the send queue will hand to Meta through
 * it (an integer {@link MIN_THROUGHPUT_MPS}–{@link MAX_THROUGHPUT_MPS}, default
 * {@link DEFAULT_THROUGHPUT_MPS}). `status` is `active`, or `paused` after Meta refused a
 * send for a reason of the account (docs/channels.md "Pause and resume"): then
 * `paused_reason` is Meta's `{code, title}` and `paused_at` when it happened (both `null`
 * while active), and the send queue holds the channel's messages until it is resumed. The
 * token itself is encrypted at rest and never part of the record.
 *
 * @category models
 */
export const Channel = Schema.Struct({
  uuid: ChannelId,
  provider: Schema.Literal("whatsapp_cloud"),
  phone_number_id: Schema.String,
  display_phone_number: Schema.String,
  waba_id: Schema.String,
  access_token_set: Schema.Literal(true),
  access_token_last4: Schema.String,
  throughput_mps: Schema.Int.annotations({
    description: "Messages per second the send queue will hand to Meta through this channel (1–1 000, default 50)"
  }),
  status: ChannelStatus,
  paused_reason: Schema.NullOr(Schema.Struct({ code: Schema.String, title: Schema.String })),
  paused_at: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})
/** @category models */
export type Channel = typeof Channel.Type

/**
 * Default `throughput_mps` of a channel, in messages per second (docs/channels.md "Throughput").
 *
 * @category models
 */
export const DEFAULT_THROUGHPUT_MPS = 50
/**
 * Lowest accepted `throughput_mps`, in messages per second.
 *
 * @category models
 */
export const MIN_THROUGHPUT_MPS = 1
/**
 * Highest accepted `throughput_mps`, in messages per second (Meta's own ceiling for a number).
 *
 * @category models
 */
export const MAX_THROUGHPUT_MPS = 1000

/**
 * Input of `Channels.add` (`POST /channels`, `channel add`): `phone_number_id` and
 * `waba_id` are Meta's numeric ids; `access_token` a Graph API token allowed to use the
 * number (16–4096 characters, no whitespace); `display_phone_number` optional (taken from
 * Meta's answer when absent), any format libphonenumber-js reads as an international number;
 * `throughput_mps` optional, an integer 1–1 000 (default 50).
 *
 * @category models
 */
export interface ChannelInput {
  readonly phone_number_id: unknown
  readonly waba_id: unknown
  readonly access_token: unknown
  readonly display_phone_number?: unknown
  readonly throughput_mps?: unknown
}

/**
 * Input of `Channels.update` (`PUT /channels/{uuid}`): each field optional; absent (or
 * `null`) leaves it as it is. `access_token` as in {@link ChannelInput} (verified with
 * Meta before anything is written); `throughput_mps` an integer 1–1 000.
 *
 * @category models
 */
export interface ChannelUpdateInput {
  readonly access_token?: unknown
  readonly throughput_mps?: unknown
}

/**
 * A channel with its organization: what the cross-organization look-ups answer
 * (routing of provider webhooks by `phone_number_id` or `waba_id`).
 *
 * @category models
 */
export interface ChannelOwner {
  readonly organization_id: OrganizationId
  readonly channel: Channel
}

/**
 * A channel with its decrypted access token, for sending through it. Internal: never
 * serialised, logged, or answered over HTTP.
 *
 * @category models
 */
export interface ChannelWithToken {
  readonly organization_id: OrganizationId
  readonly channel: Channel
  readonly access_token: string
}

/**
 * The most channels one organization may have (a fixed product limit).
 *
 * @category models
 */
export const MAX_CHANNELS_PER_ORGANIZATION = 20

/**
 * The smallest gap between two messages of a channel handed to Meta, in ms:
 * 1000 / (0.95 × `throughputMps`) (5% headroom under the channel's `throughput_mps`, so no
 * sliding one-second window ever holds more than `throughputMps`). Every store paces
 * with it.
 *
 * @category storage
 */
export const pacingIntervalMs = (throughputMps: number): number => 1000 / (0.95 * throughputMps)

/**
 * A channel's cool-down after Meta throttled it, in ms: 1 000 after the first throttle,
 * doubling while throttles continue, at most 60 000 (docs/messaging.md "Classes of
 * failure"). `previousMs` is the channel's `cooldown_ms` (0 when not cooling down); a
 * message `Sent` through the channel resets it to 0. Every store applies it.
 *
 * @category storage
 */
export const nextCooldownMs = (previousMs: number): number => Math.min(60_000, Math.max(1_000, previousMs * 2))
