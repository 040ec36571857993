import type { Channel, Chat, Message, StoredChannel, Template, TemplateSync } from "@switchboard/core"
import { type BroadcastDecoders, broadcastDecodersOf } from "./rows/broadcasts.js"
import { channelDecoderOf, type ChannelRow, storedChannelDecoderOf } from "./rows/channels.js"
import { chatDecoderOf, type ChatJoinRow } from "./rows/chats.js"
import { type ContactDecoders, contactDecodersOf } from "./rows/contacts.js"
import { type MediaCodec, mediaCodecOf } from "./rows/media.js"
import { messageDecoderOf, type MessageRow } from "./rows/messages.js"
import { type OrganizationCodec, organizationCodecOf } from "./rows/organizations.js"
import { templateDecoderOf, type TemplateRow } from "./rows/templates.js"
import { templateSyncDecoderOf, type TemplateSyncRow } from "./rows/templateSyncs.js"
import { type WebhookDecoders, webhookDecodersOf } from "./rows/webhooks.js"
import type { SqlValues } from "./SqlDialect.js"

/**
 * Every row decoder of one dialect's values, built once per store (or once per process:
 * they hold no state), so decoding a row makes no choice about the engine.
 *
 * @category decoders
 */
export interface Decoders extends ContactDecoders {
  readonly message: (row: MessageRow) => Message
  readonly chat: (row: ChatJoinRow, groups: Chat["groups"], labels: Chat["labels"]) => Chat
  readonly channel: (row: ChannelRow) => Channel
  /** A channel row with its organization and sealed token, as the channel repository answers it. */
  readonly storedChannel: (row: ChannelRow) => StoredChannel
  readonly template: (row: TemplateRow) => Template
  readonly templateSync: (row: TemplateSyncRow) => TemplateSync
  readonly organizations: OrganizationCodec
  readonly webhooks: WebhookDecoders
  readonly broadcasts: BroadcastDecoders
  readonly media: MediaCodec
}

/**
 * The {@link Decoders} of `values` (a dialect is one).
 *
 * @example
 * const decoders = decodersOf(dialect)
 * const message = decoders.message(row)
 *
 * @category decoders
 */
export const decodersOf = (values: SqlValues): Decoders => {
  const channel = channelDecoderOf(values)
  return {
  ...contactDecodersOf(values),
  message: messageDecoderOf(values),
  chat: chatDecoderOf(values),
  channel,
  storedChannel: storedChannelDecoderOf(channel),
  template: templateDecoderOf(values),
  templateSync: templateSyncDecoderOf(values),
  organizations: organizationCodecOf(values),
  webhooks: webhookDecodersOf(values),
  broadcasts: broadcastDecodersOf(values),
  media: mediaCodecOf(values)
  }
}
