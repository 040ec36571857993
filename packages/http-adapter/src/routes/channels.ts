import { Effect } from "effect"
import {
  type Channel,
  type ChannelId,
  type ChannelInput,
  Channels,
  type ChannelUpdateInput,
  MAX_THROUGHPUT_MPS,
  MIN_THROUGHPUT_MPS,
  type OrganizationId,
  TemplateSyncs
} from "@switchboard/core"
import { defineRoute } from "./route.js"
import { ChannelDetailsRecord, ChannelListData, ChannelRecord, DeletedData, TemplateSyncData } from "./schemas.js"
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
  summary: "Get a channel with its send queue figures and its last template sync",
  description:
    "The channel as listed by `GET /channels` (`status` `active` or `paused`, with `paused_reason`), plus `queue`: " +
    "its messages `queued` and `sending`, and when the oldest queued one was created; and `template_sync`: when the " +
    "templates of its WhatsApp Business Account were last read from Meta, the counts of that sync and its error " +
    "(all null before the first). The access token is never returned.",
  data: ChannelDetailsRecord,
  errors: [NEEDS_KEY],
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Channels, (channels) => channels.get(auth.organization.id, uuidOf<ChannelId>(params.uuid))),
      (channel) => ({ message: "Channel retrieved", data: channel })
    ).pipe(withQueue(auth.organization.id))
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
    "an empty body changes nothing. A new token also resumes a paused channel.",
  data: ChannelDetailsRecord,
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
    ).pipe(withQueue(auth.organization.id))
})

/**
 * `POST /channels/{uuid}/resume`: a `paused` channel becomes `active` and its waiting
 * messages are due at once (event `channel.resumed`); an active one is answered as it is.
 * Data is the channel with its queue figures.
 */
export const resumeChannelRoute = defineRoute({
  method: "POST",
  path: "/channels/:uuid/resume",
  tag: "Channels",
  summary: "Resume a paused channel",
  description:
    "The send queue pauses a channel when Meta refuses a send for a reason of the account (its token, its payment " +
    "method, a restriction). Once that is fixed, this resumes it: `status` `active`, its waiting messages due at once, " +
    "event `channel.resumed`. An active channel is answered unchanged.",
  data: ChannelDetailsRecord,
  errors: [NEEDS_KEY],
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Channels, (channels) => channels.resume(auth.organization.id, uuidOf<ChannelId>(params.uuid))),
      (channel) => ({ message: "Channel resumed", data: channel })
    ).pipe(withQueue(auth.organization.id))
})

/**
 * `POST /channels/{uuid}/templates/sync`: reads the channel's WhatsApp Business Account's
 * templates from Meta now and brings the organization's in line; data `{added, updated,
 * deleted, unchanged}` (docs/templates-and-replies.md "Templates from Meta").
 */
export const syncChannelTemplatesRoute = defineRoute({
  method: "POST",
  path: "/channels/:uuid/templates/sync",
  tag: "Channels",
  summary: "Sync the templates of the channel's account from Meta now",
  description:
    "Reads every template of the channel's WhatsApp Business Account from Meta (`GET /{waba_id}/message_templates`, " +
    "with the token of an active channel of the organization on that account) and brings the organization's templates " +
    "of that account in line: new ones added, changed ones updated, ones Meta no longer has marked `DELETED`. The same " +
    "sync runs by itself when a channel is added and then every 6 hours. One sync per account at a time: while another " +
    "runs, `409 sync_in_progress`. Meta's failure (after retries of its temporary errors) answers `502 " +
    "template_sync_failed` and is kept on the channel's `template_sync`.",
  data: TemplateSyncData,
  errors: ["no_channel_for_account", "sync_in_progress", "template_sync_failed", NEEDS_KEY],
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(Effect.flatMap(TemplateSyncs, (syncs) => syncs.syncChannel(auth.organization.id, uuidOf<ChannelId>(params.uuid))), (outcome) => ({
      message: "Templates synced",
      data: outcome
    }))
})

/**
 * A route result whose channel gains its send queue figures (`Channels.queue`) and its
 * last template sync (`Channels.templateSync`).
 */
const withQueue =
  (organizationId: OrganizationId) =>
  <E, R>(result: Effect.Effect<{ readonly message: string; readonly data: Channel }, E, R>) =>
    Effect.flatMap(result, ({ message, data }) =>
      Effect.flatMap(Channels, (channels) =>
        Effect.map(
          Effect.all([channels.queue(organizationId, data.uuid), channels.templateSync(organizationId, data.uuid)]),
          ([queue, template_sync]) => ({ message, data: { ...data, queue, template_sync } })
        )
      )
    )

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
export const channelRoutes = [
  listChannelsRoute,
  addChannelRoute,
  getChannelRoute,
  updateChannelRoute,
  resumeChannelRoute,
  syncChannelTemplatesRoute,
  removeChannelRoute
] as const
