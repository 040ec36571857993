import type { Channel, ChannelChange, ChannelId, ChannelStatus, OrganizationId, StoredChannel } from "@switchboard/core"
import type { SqlValues } from "../SqlDialect.js"
import { jsonOrNull, type SqlJson } from "./values.js"

// Rows of `channels` and their decoding into core's records (read by the channel
// repository and by the send queue). The cast to the branded id is safe: every id was
// written from a branded value.

/**
 * A row of `channels` (its public columns: never the send queue's pacing state).
 *
 * @category rows
 */
export interface ChannelRow {
  readonly uuid: string
  readonly organization_id: string
  readonly phone_number_id: string
  readonly display_phone_number: string
  readonly waba_id: string
  readonly access_token_sealed: string
  readonly access_token_last4: string
  readonly throughput_mps: number
  readonly status: ChannelStatus
  /** Meta's `{code, title}`, or `null` while active. */
  readonly paused_reason: SqlJson
  readonly paused_at: string | null
  readonly created_at: string
  readonly updated_at: string
}

/**
 * The columns of a {@link ChannelRow}, in `SELECT` order.
 *
 * @category statements
 */
export const CHANNEL_COLUMNS = `uuid, organization_id, phone_number_id, display_phone_number, waba_id, access_token_sealed,
  access_token_last4, throughput_mps, status, paused_reason, paused_at, created_at, updated_at`

/**
 * The parameters of a channel's insert: `uuid, organization_id, provider, phone_number_id,
 * display_phone_number, waba_id, access_token_sealed, access_token_last4, throughput_mps,
 * status, paused_reason, paused_at, created_at, updated_at` (its token sealed).
 *
 * @category parameters
 */
export const channelValues = (
  channel: Channel,
  organizationId: string,
  accessTokenSealed: string
): Array<unknown> => [
  channel.uuid,
  organizationId,
  channel.provider,
  channel.phone_number_id,
  channel.display_phone_number,
  channel.waba_id,
  accessTokenSealed,
  channel.access_token_last4,
  channel.throughput_mps,
  channel.status,
  jsonOrNull(channel.paused_reason),
  channel.paused_at,
  channel.created_at,
  channel.updated_at
]

/**
 * The channel record of a row (never its sealed token), for one dialect's values.
 *
 * @category decoders
 */
export const channelDecoderOf =
  ({ readJson }: SqlValues) =>
  (row: ChannelRow): Channel => ({
    uuid: row.uuid as ChannelId,
    provider: "whatsapp_cloud",
    phone_number_id: row.phone_number_id,
    display_phone_number: row.display_phone_number,
    waba_id: row.waba_id,
    access_token_set: true,
    access_token_last4: row.access_token_last4,
    throughput_mps: row.throughput_mps,
    status: row.status,
    paused_reason: readJson(row.paused_reason) as Channel["paused_reason"],
    paused_at: row.paused_at,
    created_at: row.created_at,
    updated_at: row.updated_at
  })

/**
 * The parameters of a channel's update: throughput, sealed token and its last four
 * characters (each `null` to keep the column), `updated_at`, then the organization and the
 * channel's uuid.
 *
 * @category parameters
 */
export const channelChangeValues = (change: ChannelChange, organizationId: string, id: string): Array<unknown> => [
  change.throughput_mps ?? null,
  change.access_token?.sealed ?? null,
  change.access_token?.last4 ?? null,
  change.updated_at,
  organizationId,
  id
]

/**
 * A channel row as a channel repository answers it (its record, its organization and its
 * sealed token), with `channel` the dialect's channel decoder ({@link channelDecoderOf}).
 *
 * @category decoders
 */
export const storedChannelDecoderOf =
  (channel: (row: ChannelRow) => Channel) =>
  (row: ChannelRow): StoredChannel => ({
    organization_id: row.organization_id as OrganizationId,
    channel: channel(row),
    access_token_sealed: row.access_token_sealed
  })
