import { Effect } from "effect"
import {
  type ChannelId,
  type ChannelInput,
  Channels,
  type ChannelUpdateInput,
  MAX_THROUGHPUT_MPS,
  MIN_THROUGHPUT_MPS
} from "@switchboard/core"
import { defineRoute } from "./route.js"
import { ChannelListData, ChannelRecord, DeletedData } from "./schemas.js"
import { uuidOf, uuidParams } from "./shared.js"

// The channel routes (docs/channels.md): an organization's own WhatsApp numbers. Every
// one needs the handler's `secretKey` (else 503 secret_key_not_configured). The access
// token goes in and never comes out: records carry only `access_token_last4`.

const NEEDS_KEY = "secret_key_not_configured"

/**
 * The `throughput_mps` rule of the bodies (messages per second). Its bounds come from core,
 * which checks the value itself (`invalid_input` naming `throughput_mps`), so the CLI and
 * the API refuse alike.
 */
const throughputMps = { type: "number", integer: true, min: MIN_THROUGHPUT_MPS, max: MAX_THROUGHPUT_MPS, optional: true } as const

/** `GET /channels`: data `{channels: [...]}`, oldest first (the first is the default). */
export const listChannelsRoute = defineRoute({
  method: "GET",
  path: "/channels",
  tag: "Channels",
  summary: "List the organization's channels (WhatsApp numbers)",
  description: "Oldest first: the first channel is the organization's default. Tokens are never returned.",
  data: ChannelListData,
  errors: [NEEDS_KEY],
  handle: ({ auth }) =>
    Effect.map(
      Effect.flatMap(Channels, (channels) => channels.list(auth.organization.id)),
      (channels) => ({ message: "Channels retrieved", data: { channels } })
    )
})

/** `POST /channels`: verifies the token with Meta, then stores the channel; data is the channel. */
export const addChannelRoute = defineRoute({
  method: "POST",
  path: "/channels",
  tag: "Channels",
  summary: "Connect a WhatsApp number",
  description:
    "Checks with Meta's Graph API (`GET /{version}/{phone_number_id}` with the token) that the access token may use the " +
    "number, then stores the channel with the token encrypted. `display_phone_number` defaults to Meta's; " +
    "`throughput_mps` (messages per second the send queue will pace it to, 1–1 000) defaults to 50.",
  data: ChannelRecord,
  errors: ["invalid_input", "channel_verification_failed", "phone_number_id_taken", "channel_limit_reached", NEEDS_KEY],
  body: {
    phone_number_id: { type: "string" },
    waba_id: { type: "string" },
    access_token: { type: "string" },
    display_phone_number: { type: "string", optional: true },
    throughput_mps: throughputMps
  },
  handle: ({ auth, body }) =>
    Effect.map(
      Effect.flatMap(Channels, (channels) => channels.add(auth.organization.id, body as ChannelInput)),
      (channel) => ({ message: "Channel connected", data: channel })
    )
})

/** `GET /channels/{uuid}`: data is the channel; another organization's or an unknown uuid → 404. */
export const getChannelRoute = defineRoute({
  method: "GET",
  path: "/channels/:uuid",
  tag: "Channels",
  summary: "Get a channel",
  description: "The channel as listed by `GET /channels`. The access token is never returned.",
  data: ChannelRecord,
  errors: [NEEDS_KEY],
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Channels, (channels) => channels.get(auth.organization.id, uuidOf<ChannelId>(params.uuid))),
      (channel) => ({ message: "Channel retrieved", data: channel })
    )
})

/**
 * `PUT /channels/{uuid}` `{access_token?, throughput_mps?}`: a new token is verified with
 * Meta first (a refusal changes nothing), then both fields are written at once; an empty
 * body changes nothing. Data is the channel.
 */
export const updateChannelRoute = defineRoute({
  method: "PUT",
  path: "/channels/:uuid",
  tag: "Channels",
  summary: "Change a channel's access token or throughput",
  description:
    "A new `access_token` is verified with Meta's Graph API like `POST /channels` (a refusal is " +
    "`channel_verification_failed` and changes nothing), then stored encrypted with `access_token_last4` updated. " +
    "`throughput_mps` (1–1 000) is the rate the send queue will pace the channel to. Both are written in one step; " +
    "an empty body changes nothing.",
  data: ChannelRecord,
  errors: ["invalid_input", "channel_verification_failed", NEEDS_KEY],
  params: uuidParams,
  body: {
    access_token: { type: "string", optional: true },
    throughput_mps: throughputMps
  },
  handle: ({ auth, params, body }) =>
    Effect.map(
      Effect.flatMap(Channels, (channels) =>
        channels.update(auth.organization.id, uuidOf<ChannelId>(params.uuid), body as ChannelUpdateInput)
      ),
      (channel) => ({ message: "Channel updated", data: channel })
    )
})

/** `DELETE /channels/{uuid}`: data `{uuid, deleted: true}`. */
export const removeChannelRoute = defineRoute({
  method: "DELETE",
  path: "/channels/:uuid",
  tag: "Channels",
  summary: "Disconnect a channel",
  data: DeletedData,
  errors: [NEEDS_KEY],
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.as(
      Effect.flatMap(Channels, (channels) => channels.remove(auth.organization.id, uuidOf<ChannelId>(params.uuid))),
      { message: "Channel removed", data: { uuid: uuidOf(params.uuid), deleted: true } }
    )
})

/**
 * The channel routes, in documentation order.
 *
 * @category routes
 */
export const channelRoutes = [listChannelsRoute, addChannelRoute, getChannelRoute, updateChannelRoute, removeChannelRoute] as const
