import { Effect } from "effect"
import {
  MAX_PREVIOUS_SECRET_EXPIRES_IN_SECONDS,
  WEBHOOK_EVENT_TYPES,
  WebhookEndpoints,
  type WebhookEndpointId,
  type WebhookEndpointInput,
  type WebhookEndpointUpdate,
  type WebhookEndpointWithSecret,
  type WebhookSecretRotationInput
} from "@switchboard/core"
import { defineRoute } from "./route.js"
import {
  DeletedData,
  WebhookDeliveryListData,
  WebhookDeliveryRetryData,
  WebhookEndpointListData,
  WebhookEndpointRecord,
  WebhookEndpointWithSecretData,
  WebhookSecretRotatedData
} from "./schemas.js"
import { pageSize, uuidOf, uuidParams } from "./shared.js"

// The webhook endpoint routes (docs/webhooks.md): the organization's own URLs receiving
// its events. Every one needs the handler's `secretKey` (the signing secrets are stored
// encrypted under it; else 503 secret_key_not_configured). A signing secret goes out in
// the answers of create and rotate-secret only, never in a record, a list or a log.

const NEEDS_KEY = "secret_key_not_configured"
const TAG = "Webhook endpoints"

/** The schema checks types and bounds; core checks the rest (blank values, the address rules). */
const url = { type: "string", empty: false, max: 2048 } as const
const events = {
  type: "array",
  items: { type: "enum", values: [...WEBHOOK_EVENT_TYPES] },
  empty: false,
  max: WEBHOOK_EVENT_TYPES.length,
  unique: true,
  optional: true,
  nullable: true
} as const
const description = { type: "string", max: 255, optional: true, nullable: true } as const

/** The record with its signing secret: `{...endpoint, secret}`. */
const withSecret = (result: WebhookEndpointWithSecret) => ({ ...result.endpoint, secret: result.secret })

const endpointIdOf = (params: Readonly<Record<string, unknown>>) => uuidOf<WebhookEndpointId>(params.uuid)

/** `POST /webhook-endpoints`: registers an endpoint; data is the endpoint with its `secret`, shown this once. */
export const createWebhookEndpointRoute = defineRoute({
  method: "POST",
  path: "/webhook-endpoints",
  tag: TAG,
  summary: "Register a webhook endpoint",
  description:
    "Registers an `https` URL (not an internal address) to receive the organization's events: `events` lists the " +
    "types it wants (absent or null: every type). The answer carries the signing `secret` (`whsec_…`): it is shown " +
    "only here and by rotate-secret, so store it now.",
  data: WebhookEndpointWithSecretData,
  errors: ["invalid_input", "webhook_url_refused", "webhook_endpoint_limit_reached", NEEDS_KEY],
  body: { url, events, description },
  handle: ({ auth, body }) =>
    Effect.map(
      Effect.flatMap(WebhookEndpoints, (endpoints) => endpoints.create(auth.organization.id, body as WebhookEndpointInput)),
      (result) => ({ message: "Webhook endpoint created", data: withSecret(result) })
    )
})

/** `GET /webhook-endpoints`: data `{webhook_endpoints: [...]}`, newest first, no secrets. */
export const listWebhookEndpointsRoute = defineRoute({
  method: "GET",
  path: "/webhook-endpoints",
  tag: TAG,
  summary: "List the organization's webhook endpoints",
  description: "Newest first. Signing secrets are never returned.",
  data: WebhookEndpointListData,
  errors: [NEEDS_KEY],
  handle: ({ auth }) =>
    Effect.map(
      Effect.flatMap(WebhookEndpoints, (endpoints) => endpoints.list(auth.organization.id)),
      (list) => ({ message: "Webhook endpoints retrieved", data: { webhook_endpoints: list } })
    )
})

/** `GET /webhook-endpoints/{uuid}`: data is the endpoint, without its secret. */
export const getWebhookEndpointRoute = defineRoute({
  method: "GET",
  path: "/webhook-endpoints/:uuid",
  tag: TAG,
  summary: "Get a webhook endpoint",
  data: WebhookEndpointRecord,
  errors: [NEEDS_KEY],
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(WebhookEndpoints, (endpoints) => endpoints.get(auth.organization.id, endpointIdOf(params))),
      (endpoint) => ({ message: "Webhook endpoint retrieved", data: endpoint })
    )
})

/**
 * `PUT /webhook-endpoints/{uuid}`: sets any of `url`, `events`, `description`, `enabled`
 * (at least one); data is the endpoint. Disabling cancels its pending deliveries.
 */
export const updateWebhookEndpointRoute = defineRoute({
  method: "PUT",
  path: "/webhook-endpoints/:uuid",
  tag: TAG,
  summary: "Change a webhook endpoint's URL, events, description or enabled flag",
  description:
    "Give at least one field. A new `url` is checked as at registration. `enabled: false` stops deliveries to the " +
    "endpoint and cancels the pending ones; `events: null` subscribes it to every type.",
  data: WebhookEndpointRecord,
  errors: ["invalid_input", "webhook_url_refused", NEEDS_KEY],
  params: uuidParams,
  body: {
    url: { ...url, optional: true },
    events,
    description,
    enabled: { type: "boolean", optional: true }
  },
  handle: ({ auth, params, body }) =>
    Effect.map(
      Effect.flatMap(WebhookEndpoints, (endpoints) =>
        endpoints.update(auth.organization.id, endpointIdOf(params), body as WebhookEndpointUpdate)
      ),
      (endpoint) => ({ message: "Webhook endpoint updated", data: endpoint })
    )
})

/** `DELETE /webhook-endpoints/{uuid}`: deletes it with its deliveries; data `{uuid, deleted: true}`. */
export const deleteWebhookEndpointRoute = defineRoute({
  method: "DELETE",
  path: "/webhook-endpoints/:uuid",
  tag: TAG,
  summary: "Delete a webhook endpoint and its deliveries log",
  data: DeletedData,
  errors: [NEEDS_KEY],
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.as(
      Effect.flatMap(WebhookEndpoints, (endpoints) => endpoints.remove(auth.organization.id, endpointIdOf(params))),
      { message: "Webhook endpoint deleted", data: { uuid: endpointIdOf(params), deleted: true as const } }
    )
})

/**
 * `POST /webhook-endpoints/{uuid}/rotate-secret` `{previous_secret_expires_in?, force?}`: a
 * new signing secret; the old one keeps signing beside it for `previous_secret_expires_in`
 * seconds (default 86 400, at most 604 800, 0: stops at once). Data is the endpoint with the
 * new `secret` and `previous_secret_expires_at`. 409 `rotation_in_progress` while an earlier
 * overlap runs, unless `force`.
 */
export const rotateWebhookSecretRoute = defineRoute({
  method: "POST",
  path: "/webhook-endpoints/:uuid/rotate-secret",
  tag: TAG,
  summary: "Rotate a webhook endpoint's signing secret, with an overlap",
  description:
    "Issues a new signing `secret`, shown only in this answer. The old secret keeps signing beside it for " +
    "`previous_secret_expires_in` seconds (default 86400 = 24 h, at most 604800 = 7 days; 0: it stops at once): until " +
    "`previous_secret_expires_at` every delivery, retries of earlier events included, carries both signatures in " +
    "`webhook-signature` (two `v1,` entries, space-separated), so a receiver holding either secret verifies it; " +
    "afterwards only the new one signs. A second rotation while the old secret still signs is 409 " +
    "`rotation_in_progress` unless `force: true`, which drops that older secret at once (at most two secrets ever sign).",
  data: WebhookSecretRotatedData,
  errors: ["invalid_input", "rotation_in_progress", NEEDS_KEY],
  params: uuidParams,
  body: {
    previous_secret_expires_in: {
      type: "number",
      integer: true,
      min: 0,
      max: MAX_PREVIOUS_SECRET_EXPIRES_IN_SECONDS,
      optional: true
    },
    force: { type: "boolean", optional: true }
  },
  // A request without a body (as before the overlap existed) rotates with the defaults.
  bodyOptional: true,
  bodyExamples: {
    default: { summary: "The old secret signs beside the new one for 24 hours", value: {} },
    oneHour: { summary: "An overlap of one hour", value: { previous_secret_expires_in: 3600 } },
    now: { summary: "The old secret stops at once (a leaked secret)", value: { previous_secret_expires_in: 0, force: true } }
  },
  handle: ({ auth, params, body }) =>
    Effect.map(
      Effect.flatMap(WebhookEndpoints, (endpoints) =>
        endpoints.rotateSecret(auth.organization.id, endpointIdOf(params), (body ?? {}) as WebhookSecretRotationInput)
      ),
      (result) => ({
        message: "Webhook secret rotated",
        data: { ...withSecret(result), previous_secret_expires_at: result.previous_secret_expires_at }
      })
    )
})

/**
 * `GET /webhook-endpoints/{uuid}/deliveries`: the endpoint's delivery attempts, newest
 * first, cursor pages (`limit` 1–100, default 20; `cursor`); data
 * `{deliveries, pagination: {mode: "cursor", limit, next_cursor, has_more}}`.
 */
export const listWebhookDeliveriesRoute = defineRoute({
  method: "GET",
  path: "/webhook-endpoints/:uuid/deliveries",
  tag: TAG,
  summary: "List a webhook endpoint's delivery attempts, newest first",
  description: "Each attempt: the event, the receiver's HTTP status or the error, how long it took, and the delivery's state after it. Kept 30 days.",
  data: WebhookDeliveryListData,
  errors: ["invalid_input", "invalid_cursor", NEEDS_KEY],
  params: uuidParams,
  query: { limit: pageSize, cursor: { type: "string", optional: true } },
  handle: ({ auth, params, query }) =>
    Effect.map(
      Effect.flatMap(WebhookEndpoints, (endpoints) =>
        endpoints.deliveries(auth.organization.id, endpointIdOf(params), {
          limit: typeof query.limit === "number" ? query.limit : undefined,
          cursor: typeof query.cursor === "string" ? query.cursor : undefined
        })
      ),
      (list) => ({ message: "Deliveries retrieved", data: list })
    )
})

/** `POST /webhook-endpoints/{uuid}/deliveries/{id}/retry`: makes a delivery due again now. */
export const retryWebhookDeliveryRoute = defineRoute({
  method: "POST",
  path: "/webhook-endpoints/:uuid/deliveries/:id/retry",
  tag: TAG,
  summary: "Send a delivery again now",
  description:
    "For a `failed` (or `delivered`) delivery, once the receiver is fixed: it becomes `pending`, due now, and is sent " +
    "with the endpoint's current URL and secret. The same event id (`webhook-id`) is sent again. " +
    "A disabled endpoint receives nothing: 409 `webhook_endpoint_disabled` until it is enabled again.",
  data: WebhookDeliveryRetryData,
  errors: ["webhook_endpoint_disabled", NEEDS_KEY],
  params: { ...uuidParams, id: { type: "string", empty: false, max: 100 } },
  handle: ({ auth, params }) =>
    Effect.as(
      Effect.flatMap(WebhookEndpoints, (endpoints) =>
        endpoints.retry(auth.organization.id, endpointIdOf(params), String(params.id))
      ),
      {
        message: "Delivery scheduled again",
        data: { endpoint_uuid: endpointIdOf(params), delivery_id: String(params.id), delivery_status: "pending" as const }
      }
    )
})

/**
 * The webhook endpoint routes, in documentation order.
 *
 * @category routes
 */
export const webhookEndpointRoutes = [
  createWebhookEndpointRoute,
  listWebhookEndpointsRoute,
  getWebhookEndpointRoute,
  updateWebhookEndpointRoute,
  deleteWebhookEndpointRoute,
  rotateWebhookSecretRoute,
  listWebhookDeliveriesRoute,
  retryWebhookDeliveryRoute
] as const
