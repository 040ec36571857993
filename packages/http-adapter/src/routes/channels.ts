import { Effect } from "effect"
import { Channels, type ChannelId, type ChannelInput } from "@switchboard/core"
import { defineRoute } from "./route.js"
import { ChannelListData, ChannelRecord, DeletedData } from "./schemas.js"
import { uuidOf, uuidParams } from "./shared.js"

// The channel routes (docs/channels.md): an organization's own WhatsApp numbers. Every
// one needs the handler's `secretKey` (else 503 secret_key_not_configured). The access
// token goes in and never comes out: records carry only `access_token_last4`.

const NEEDS_KEY = "secret_key_not_configured"

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
    "number, then stores the channel with the token encrypted. `display_phone_number` defaults to Meta's.",
  data: ChannelRecord,
  errors: ["invalid_input", "channel_verification_failed", "phone_number_id_taken", "channel_limit_reached", NEEDS_KEY],
  body: {
    phone_number_id: { type: "string" },
    waba_id: { type: "string" },
    access_token: { type: "string" },
    display_phone_number: { type: "string", optional: true }
  },
  handle: ({ auth, body }) =>
    Effect.map(
      Effect.flatMap(Channels, (channels) => channels.add(auth.organization.id, body as ChannelInput)),
      (channel) => ({ message: "Channel connected", data: channel })
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
export const channelRoutes = [listChannelsRoute, addChannelRoute, removeChannelRoute] as const
