import { Effect } from "effect"
import { type Broadcast, type BroadcastId, type BroadcastInput, Broadcasts } from "@switchboard/core"
import { defineRoute } from "./route.js"
import { BroadcastListData, BroadcastRecipientListData, BroadcastRecord } from "./schemas.js"
import { pageSize, uuidOf, uuidParams } from "./shared.js"

// The broadcast routes (docs/broadcasts.md): one approved template to an audience, each
// recipient a message of the send queue. The schemas check types only; core checks the
// content (the template as POST /send/template does, placeholders, audience uuids, the
// audience's size), so one 400 names every bad field. POST /broadcasts counts once in the
// `send` bucket, whatever the audience's size (its limits are the audience cap and Meta's
// tier), and honours Idempotency-Key like the sends: the broadcast gets the uuid the key's
// record holds, so a takeover after a crash answers the broadcast the first attempt created.

const TAG = "Broadcasts"
const uuids = { type: "array", optional: true, items: { type: "any" } } as const

/**
 * The envelope's `message` of a created broadcast: `Broadcast scheduled` or `Broadcast
 * sending`; through the recording transport (no channel, docs/broadcasts.md "Records") it
 * says that nothing leaves the server, as its `transport` does.
 */
const broadcastCreatedMessage = (broadcast: Broadcast): string => {
  const recording = broadcast.transport === "recording"
  if (broadcast.status === "scheduled") return recording ? "Broadcast scheduled: no channel, nothing will leave this server" : "Broadcast scheduled"
  return recording ? "Broadcast recording: no channel, nothing leaves this server" : "Broadcast sending"
}

/**
 * `POST /broadcasts`: body `{name, template: {name, language: {code}, components},
 * audience: {group_uuids?, label_uuids?, contact_uuids?}, channel_uuid?, send_at?}`; data
 * the broadcast, `scheduled` or `sending`, with the `transport` its messages are handed to.
 */
export const createBroadcastRoute = defineRoute({
  method: "POST",
  path: "/broadcasts",
  tag: TAG,
  summary: "Send an approved template to an audience",
  description:
    "Checks the template as `POST /send/template` does (parameters may hold `{{contact.first_name}}`, " +
    "`{{contact.last_name}}`, `{{contact.phone}}`, `{{contact.email}}`, each with an optional `|fallback`), " +
    "counts the audience (the union of the groups, labels and contacts, each contact once; 400 `empty_audience`, " +
    "400 `audience_too_large` above 100 000) and answers at once: `sending`, or `scheduled` for a future `send_at`. " +
    "Recipients are written in the background and sent through the send queue, paced with the channel's other messages. " +
    "`transport` says what its messages are handed to: `recording` when the organization has no channel (stored and " +
    "marked sent, nothing leaves the server), `whatsapp` through a channel.",
  data: BroadcastRecord,
  errors: [
    "invalid_input",
    "template_not_found",
    "template_not_approved",
    "template_unsupported",
    "template_parameters_mismatch",
    "empty_audience",
    "audience_too_large",
    "not_found"
  ],
  bucket: "send",
  idempotent: true,
  body: {
    name: { type: "string" },
    template: {
      type: "object",
      props: {
        name: { type: "string" },
        language: { type: "object", props: { code: { type: "string" } } },
        components: { type: "array", optional: true }
      }
    },
    audience: {
      type: "object",
      props: { group_uuids: uuids, label_uuids: uuids, contact_uuids: uuids }
    },
    channel_uuid: { type: "string", optional: true },
    send_at: { type: "string", optional: true }
  },
  handle: ({ auth, body, idempotency }) =>
    Effect.map(
      Effect.flatMap(Broadcasts, (broadcasts) =>
        broadcasts.create(
          auth.organization.id,
          body as BroadcastInput,
          idempotency === undefined ? {} : { broadcastUuid: idempotency.resourceUuid as BroadcastId }
        )
      ),
      (broadcast) => ({ message: broadcastCreatedMessage(broadcast), data: broadcast })
    )
})

/** `GET /broadcasts?limit=&cursor=`: newest first; data `{broadcasts, pagination}`. */
export const listBroadcastsRoute = defineRoute({
  method: "GET",
  path: "/broadcasts",
  tag: TAG,
  summary: "List broadcasts, newest first",
  data: BroadcastListData,
  errors: ["invalid_input", "invalid_cursor"],
  query: { limit: pageSize, cursor: { type: "string", optional: true } },
  handle: ({ auth, query }) =>
    Effect.map(
      Effect.flatMap(Broadcasts, (broadcasts) =>
        broadcasts.list(auth.organization.id, {
          limit: typeof query.limit === "number" ? query.limit : undefined,
          cursor: typeof query.cursor === "string" ? query.cursor : undefined
        })
      ),
      (list) => ({ message: "Broadcasts retrieved", data: list })
    )
})

/** `GET /broadcasts/{uuid}`: the broadcast with its counts. */
export const getBroadcastRoute = defineRoute({
  method: "GET",
  path: "/broadcasts/:uuid",
  tag: TAG,
  summary: "Read a broadcast and its counts",
  data: BroadcastRecord,
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Broadcasts, (broadcasts) => broadcasts.get(auth.organization.id, uuidOf<BroadcastId>(params.uuid))),
      (broadcast) => ({ message: "Broadcast retrieved", data: broadcast })
    )
})

/** `GET /broadcasts/{uuid}/recipients?status=&limit=&cursor=`: data `{recipients, pagination}`. */
export const listBroadcastRecipientsRoute = defineRoute({
  method: "GET",
  path: "/broadcasts/:uuid/recipients",
  tag: TAG,
  summary: "List a broadcast's recipients and what became of each",
  description: "In contact uuid order; `status` keeps those whose message has that status (`queued`, `sending`, `sent`, `delivered`, `read`, `failed`).",
  data: BroadcastRecipientListData,
  errors: ["invalid_input", "invalid_cursor"],
  params: uuidParams,
  query: { status: { type: "string", optional: true }, limit: pageSize, cursor: { type: "string", optional: true } },
  handle: ({ auth, params, query }) =>
    Effect.map(
      Effect.flatMap(Broadcasts, (broadcasts) =>
        broadcasts.recipients(auth.organization.id, uuidOf<BroadcastId>(params.uuid), {
          status: typeof query.status === "string" ? query.status : undefined,
          limit: typeof query.limit === "number" ? query.limit : undefined,
          cursor: typeof query.cursor === "string" ? query.cursor : undefined
        })
      ),
      (list) => ({ message: "Recipients retrieved", data: list })
    )
})

/** `POST /broadcasts/{uuid}/cancel`: waiting recipients fail with `cancelled`; 409 once it ended. */
export const cancelBroadcastRoute = defineRoute({
  method: "POST",
  path: "/broadcasts/:uuid/cancel",
  tag: TAG,
  summary: "Cancel a scheduled or sending broadcast",
  description:
    "The broadcast becomes `cancelled`; its `queued` recipients fail with `cancelled` (those being sent finish). " +
    "A broadcast that already ended is a 409 `broadcast_not_cancellable`.",
  data: BroadcastRecord,
  errors: ["broadcast_not_cancellable"],
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Broadcasts, (broadcasts) => broadcasts.cancel(auth.organization.id, uuidOf<BroadcastId>(params.uuid))),
      (broadcast) => ({ message: "Broadcast cancelled", data: broadcast })
    )
})

/** Every broadcast route, in documentation order. */
export const broadcastRoutes = [
  createBroadcastRoute,
  listBroadcastsRoute,
  getBroadcastRoute,
  listBroadcastRecipientsRoute,
  cancelBroadcastRoute
] as const
