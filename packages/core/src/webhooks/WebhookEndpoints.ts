import { Context, Effect, Encoding, Layer, Option } from "effect"
import { SecretKeyMismatch, SecretKeyMissing } from "../model/channelErrors.js"
import { decryptionKeysOf, SecretKey } from "../common/SecretKey.js"
import { sealSecret } from "../common/secretBox.js"
import { checkStoredKey, claimKeyCheck } from "../common/secretKeyCheck.js"
import { cursorPage, encodeCursor, recordListCursorBinding } from "../common/cursor.js"
import { readCursorPageParams } from "../common/listParams.js"
import type { ChatCursorPagination } from "../model/chats.js"
import { InvalidInput, RecordNotFound } from "../model/commonErrors.js"
import { IssueCollector, isRecord } from "../internal/validation.js"
import { nowIso } from "../internal/time.js"
import type { OrganizationId } from "../model/organizations.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { StorageError } from "../storage/errors.js"
import { Storage } from "../storage/Storage.js"
import { checkWebhookUrl } from "./addressSafety.js"
import {
  WebhookEndpointDisabled,
  WebhookEndpointLimitReached,
  WebhookRotationInProgress,
  type WebhookUrlRefused
} from "../model/webhookErrors.js"
import {
  DEFAULT_PREVIOUS_SECRET_EXPIRES_IN_SECONDS,
  MAX_PREVIOUS_SECRET_EXPIRES_IN_SECONDS,
  MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION,
  previousSecretSigns,
  WEBHOOK_EVENT_TYPES,
  type WebhookDeliveryAttempt,
  type WebhookEndpoint,
  type WebhookEndpointId,
  type WebhookEndpointPatch,
  type WebhookEventType
} from "../model/webhooks.js"
import { WebhookSettings, type WebhookSettingsValue } from "./WebhookSettings.js"

/** Longest endpoint URL, in characters (docs/webhooks.md "Endpoints"). */
export const MAX_WEBHOOK_URL_LENGTH = 2048

/** Longest endpoint description, in characters. */
export const MAX_WEBHOOK_DESCRIPTION_LENGTH = 255

/** Random bytes in a signing secret: 32 (256 bits), base64 after the `whsec_` prefix. */
export const WEBHOOK_SECRET_BYTES = 32

/**
 * What `WebhookEndpoints.create` takes (docs/webhooks.md "Endpoints"): `url` (`https`,
 * 1–2048 characters, not an internal address), `events` (a non-empty list of distinct
 * {@link WebhookEventType}s; absent or `null`: every type) and `description` (at most 255
 * characters; absent, `null` or blank: none). Values of other types are reported as issues.
 *
 * @category webhooks
 */
export interface WebhookEndpointInput {
  readonly url: string
  readonly events?: ReadonlyArray<WebhookEventType> | null | undefined
  readonly description?: string | null | undefined
}

/**
 * What `WebhookEndpoints.update` takes: any of the fields of {@link WebhookEndpointInput},
 * and `enabled` (a disabled endpoint receives nothing, and its pending deliveries are
 * cancelled). Absent fields are kept; at least one must be given.
 *
 * @category webhooks
 */
export interface WebhookEndpointUpdate {
  readonly url?: string | undefined
  readonly events?: ReadonlyArray<WebhookEventType> | null | undefined
  readonly description?: string | null | undefined
  readonly enabled?: boolean | undefined
}

/**
 * An endpoint with its signing secret in plaintext (`whsec_` and the base64 of 32 random
 * bytes): the answer of `create` and `rotateSecret`, the only times the secret is shown.
 *
 * @category webhooks
 */
export interface WebhookEndpointWithSecret {
  readonly endpoint: WebhookEndpoint
  readonly secret: string
}

/**
 * What `WebhookEndpoints.rotateSecret` takes (docs/webhooks.md "The secret"):
 * `previous_secret_expires_in`, how many seconds the old secret keeps signing beside the
 * new one (a whole number 0–604 800; default 86 400; 0: it stops at once), and `force`
 * (default `false`): rotate even while an earlier rotation's previous secret still signs,
 * dropping that older secret at once. Values of other types are reported as issues.
 *
 * @category webhooks
 */
export interface WebhookSecretRotationInput {
  readonly previous_secret_expires_in?: number | undefined
  readonly force?: boolean | undefined
}

/**
 * The answer of `rotateSecret`: the endpoint, its new `secret` (shown only here) and
 * `previous_secret_expires_at`, the instant (ISO 8601) the old secret stops signing, or
 * `null` when it stopped at once.
 *
 * @category webhooks
 */
export interface WebhookSecretRotated extends WebhookEndpointWithSecret {
  readonly previous_secret_expires_at: string | null
}

/**
 * The parameters of an endpoint's deliveries log: `limit` 1–100 (default 20) and
 * `cursor`, the `next_cursor` of the previous page of the same endpoint's log.
 *
 * @category webhooks
 */
export interface WebhookDeliveryListParams {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

/**
 * One page of an endpoint's delivery attempts, newest first (docs/webhooks.md "The
 * deliveries log"): the `data` of `GET /webhook-endpoints/{uuid}/deliveries`; `pagination`
 * is the cursor object of a chat's messages.
 *
 * @category webhooks
 */
export interface WebhookDeliveryList {
  readonly deliveries: ReadonlyArray<WebhookDeliveryAttempt>
  readonly pagination: ChatCursorPagination
}

/**
 * Webhook endpoints: the URLs of an organization that receive its events, signed with a
 * secret of their own (docs/webhooks.md). Every operation needs the {@link SecretKey}
 * (the secrets are stored sealed under it) and fails with `SecretKeyMissing` without one.
 * An unknown uuid, or one of another organization, is `RecordNotFound`. Bad input is an
 * `InvalidInput` naming every offending field, and writes nothing.
 *
 * @category services
 */
export interface WebhookEndpointsService {
  /**
   * Registers an endpoint, enabled, with a new signing secret (shown only in this answer).
   * Bad fields → `InvalidInput`; a URL the address rules refuse → `WebhookUrlRefused`;
   * an organization with {@link MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION} endpoints →
   * `WebhookEndpointLimitReached`.
   */
  readonly create: (
    organizationId: OrganizationId,
    input: WebhookEndpointInput
  ) => Effect.Effect<
    WebhookEndpointWithSecret,
    InvalidInput | WebhookUrlRefused | WebhookEndpointLimitReached | SecretKeyMissing | SecretKeyMismatch | StorageError
  >
  /** The organization's endpoints, newest first, without their secrets. */
  readonly list: (
    organizationId: OrganizationId
  ) => Effect.Effect<ReadonlyArray<WebhookEndpoint>, SecretKeyMissing | StorageError>
  /** One endpoint, without its secret. */
  readonly get: (
    organizationId: OrganizationId,
    id: WebhookEndpointId
  ) => Effect.Effect<WebhookEndpoint, RecordNotFound | SecretKeyMissing | StorageError>
  /**
   * Changes the given fields (checked as in `create`); disabling cancels the endpoint's
   * pending deliveries. A field given its current value changes nothing.
   */
  readonly update: (
    organizationId: OrganizationId,
    id: WebhookEndpointId,
    update: WebhookEndpointUpdate
  ) => Effect.Effect<WebhookEndpoint, InvalidInput | WebhookUrlRefused | RecordNotFound | SecretKeyMissing | StorageError>
  /** Deletes the endpoint with its deliveries and their attempts. */
  readonly remove: (
    organizationId: OrganizationId,
    id: WebhookEndpointId
  ) => Effect.Effect<void, RecordNotFound | SecretKeyMissing | StorageError>
  /**
   * Issues a new signing secret (shown only here). The old one keeps signing beside it for
   * `previous_secret_expires_in` seconds (default 86 400; 0: not at all): until then every
   * attempt, retries of earlier events included, carries both signatures; afterwards only
   * the new one. While an earlier rotation's previous secret still signs →
   * `WebhookRotationInProgress`, nothing changed, unless `force` (that older secret is then
   * dropped at once: at most two secrets ever sign). A bad option → `InvalidInput`.
   */
  readonly rotateSecret: (
    organizationId: OrganizationId,
    id: WebhookEndpointId,
    input?: WebhookSecretRotationInput
  ) => Effect.Effect<
    WebhookSecretRotated,
    InvalidInput | RecordNotFound | WebhookRotationInProgress | SecretKeyMissing | SecretKeyMismatch | StorageError
  >
  /**
   * One cursor page of the endpoint's delivery attempts, newest first (`attempted_at desc,
   * id desc`): `limit` 1–100 (default 20), `cursor` the `next_cursor` of the previous page.
   * A bad parameter → `InvalidInput` naming it (`invalid_cursor` for a cursor of another
   * endpoint's log).
   */
  readonly deliveries: (
    organizationId: OrganizationId,
    id: WebhookEndpointId,
    params: WebhookDeliveryListParams
  ) => Effect.Effect<WebhookDeliveryList, InvalidInput | RecordNotFound | SecretKeyMissing | StorageError>
  /**
   * Makes one delivery of the endpoint due again now (a hand retry, for example of a
   * `failed` one after the receiver was fixed); the dispatcher sends it with the current
   * secret. An unknown endpoint or delivery → `RecordNotFound`; a disabled endpoint →
   * `WebhookEndpointDisabled`, nothing changed (a disabled endpoint receives nothing). The
   * store's `retryDelivery` refuses a disabled endpoint's delivery, in the same atomic step
   * on SQLite and memory; on MongoDB a claim cancels a due delivery whose endpoint was
   * disabled meanwhile (docs/webhooks.md "Retries").
   */
  readonly retry: (
    organizationId: OrganizationId,
    endpointId: WebhookEndpointId,
    deliveryId: string
  ) => Effect.Effect<void, RecordNotFound | WebhookEndpointDisabled | SecretKeyMissing | StorageError>
}

/**
 * Tag of the {@link WebhookEndpointsService}. `WebhookEndpoints.layer` needs `Storage`
 * and `SecureRandom`, and reads {@link SecretKey} and {@link WebhookSettings} (both have
 * defaults; settings provided to a call win over those provided to the Layer). With a
 * key, building it checks the key against the store's check value (`SecretKeyMismatch`).
 *
 * @category services
 * @example
 * import { Effect } from "effect"
 * import { WebhookEndpoints, type OrganizationId } from "@switchboard/core"
 *
 * const register = (organizationId: OrganizationId) =>
 *   Effect.flatMap(WebhookEndpoints, (endpoints) =>
 *     endpoints.create(organizationId, { url: "https://hooks.example.com/switchboard", events: ["message.received"] })
 *   )
 */
export class WebhookEndpoints extends Context.Tag("@switchboard/core/WebhookEndpoints")<
  WebhookEndpoints,
  WebhookEndpointsService
>() {
  static readonly layer: Layer.Layer<WebhookEndpoints, SecretKeyMismatch | StorageError, Storage | SecureRandom> =
    Layer.effect(
      WebhookEndpoints,
      Effect.suspend(() => make)
    )
}

const endpointNotFound = (id: string) => new RecordNotFound({ missing: [{ resource: "webhook_endpoint", uuid: id }] })

const DELIVERIES_SCOPE = "webhook_deliveries"

/** How often a rotation reads again when its compare-and-set lost to another write. */
const MAX_ROTATION_ROUNDS = 20

/** The checked options of a rotation, or `InvalidInput` with every issue. */
const readRotation = (
  input: unknown
): Effect.Effect<{ readonly expiresInSeconds: number; readonly force: boolean }, InvalidInput> => {
  const collector = new IssueCollector()
  if (input !== undefined && input !== null && !isRecord(input)) collector.add("invalid_type", "body", "the input must be an object")
  const record = isRecord(input) ? input : {}
  let expiresInSeconds = DEFAULT_PREVIOUS_SECRET_EXPIRES_IN_SECONDS
  const given = record.previous_secret_expires_in
  if (given !== undefined && given !== null) {
    if (typeof given !== "number" || !Number.isInteger(given) || given < 0 || given > MAX_PREVIOUS_SECRET_EXPIRES_IN_SECONDS) {
      collector.add(
        typeof given === "number" ? "invalid_format" : "invalid_type",
        "previous_secret_expires_in",
        `previous_secret_expires_in must be a whole number of seconds from 0 to ${MAX_PREVIOUS_SECRET_EXPIRES_IN_SECONDS}`
      )
    } else expiresInSeconds = given
  }
  let force = false
  if (record.force !== undefined && record.force !== null) {
    if (typeof record.force === "boolean") force = record.force
    else collector.add("invalid_type", "force", "force must be true or false")
  }
  return collector.issues.length === 0
    ? Effect.succeed({ expiresInSeconds, force })
    : Effect.fail(new InvalidInput({ issues: collector.issues }))
}

const make = Effect.gen(function* () {
  const storage = yield* Storage
  const random = yield* SecureRandom
  const secretKeyValue = yield* SecretKey
  const { key } = secretKeyValue
  // Every configured key passes the key check (the first seals): docs/deployment.md "Rotating the secret key".
  const keys = decryptionKeysOf(secretKeyValue)
  const layerSettings = yield* WebhookSettings
  if (key !== undefined) yield* checkStoredKey(storage, keys)
  const requireKey: Effect.Effect<Uint8Array, SecretKeyMissing> =
    key === undefined ? Effect.fail(new SecretKeyMissing()) : Effect.succeed(key)
  // Settings provided to the call (a handler's runtime) win over those the Layer was built with.
  const settings: Effect.Effect<WebhookSettingsValue> = Effect.map(Effect.context<never>(), (context) =>
    context.unsafeMap.has(WebhookSettings.key) ? Context.get(context, WebhookSettings) : layerSettings
  )
  const newSecret = Effect.map(random.bytes(WEBHOOK_SECRET_BYTES), (bytes) => `whsec_${Encoding.encodeBase64(bytes)}`)
  const found = (organizationId: OrganizationId, id: WebhookEndpointId) =>
    Effect.flatMap(storage.webhooks.findEndpoint(organizationId, id), (stored) =>
      Option.match(stored, { onNone: () => Effect.fail(endpointNotFound(id)), onSome: Effect.succeed })
    )
  /** Fails with `WebhookUrlRefused` unless the address rules accept `url`. */
  const checkUrl = (url: string) => Effect.flatMap(settings, (current) => Effect.asVoid(checkWebhookUrl(url, current)))

  const create = Effect.fn("WebhookEndpoints.create")(function* (organizationId: OrganizationId, input: WebhookEndpointInput) {
    const secretKey = yield* requireKey
    const fields = yield* readFields(input, "create")
    const url = fields.url ?? ""
    yield* checkUrl(url)
    // The first sealed value stores the key's check value; a different key claimed it first → mismatch.
    yield* claimKeyCheck(storage, keys)
    const now = yield* nowIso
    const endpoint: WebhookEndpoint = {
      uuid: (yield* random.uuid()) as WebhookEndpointId,
      url,
      events: fields.events ?? null,
      description: fields.description ?? null,
      enabled: true,
      created_at: now,
      updated_at: now
    }
    const secret = yield* newSecret
    const outcome = yield* storage.webhooks.insertEndpoint(
      organizationId,
      { endpoint, secret_sealed: sealSecret(secretKey, secret) },
      MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION
    )
    if (outcome._tag === "LimitReached") return yield* new WebhookEndpointLimitReached({ limit: outcome.limit })
    const result: WebhookEndpointWithSecret = { endpoint: outcome.endpoint, secret }
    return result
  })

  const update = Effect.fn("WebhookEndpoints.update")(function* (
    organizationId: OrganizationId,
    id: WebhookEndpointId,
    input: WebhookEndpointUpdate
  ) {
    yield* requireKey
    const patch = yield* readFields(input, "update")
    // Unknown endpoint first: a 404 says more than a refused URL of an endpoint that is not there.
    yield* found(organizationId, id)
    if (patch.url !== undefined) yield* checkUrl(patch.url)
    const now = yield* nowIso
    const updated = yield* storage.webhooks.updateEndpoint(organizationId, id, patch, now)
    return yield* Option.match(updated, { onNone: () => Effect.fail(endpointNotFound(id)), onSome: Effect.succeed })
  })

  const rotateSecret = Effect.fn("WebhookEndpoints.rotateSecret")(function* (
    organizationId: OrganizationId,
    id: WebhookEndpointId,
    input?: WebhookSecretRotationInput
  ) {
    const secretKey = yield* requireKey
    const { expiresInSeconds, force } = yield* readRotation(input)
    yield* claimKeyCheck(storage, keys)
    const secret = yield* newSecret
    const secretSealed = sealSecret(secretKey, secret)
    // A compare-and-set on the sealed secret read: when another rotation (or a re-seal by
    // `secret-key rotate`) wrote first, read again and decide again.
    for (let round = 0; ; round++) {
      const stored = yield* found(organizationId, id)
      const now = yield* nowIso
      if (!force && stored.previous_secret_expires_at !== null && previousSecretSigns(stored.previous_secret_expires_at, now)) {
        return yield* new WebhookRotationInProgress({ uuid: id, previous_secret_expires_at: stored.previous_secret_expires_at })
      }
      const expiresAt = expiresInSeconds === 0 ? null : new Date(Date.parse(now) + expiresInSeconds * 1000).toISOString()
      const outcome = yield* storage.webhooks.rotateSecret(
        organizationId,
        id,
        {
          expected_secret_sealed: stored.secret_sealed,
          secret_sealed: secretSealed,
          previous_secret_sealed: expiresAt === null ? null : stored.secret_sealed,
          previous_secret_expires_at: expiresAt
        },
        now
      )
      switch (outcome._tag) {
        case "NotFound":
          return yield* endpointNotFound(id)
        case "Rotated": {
          const result: WebhookSecretRotated = { endpoint: outcome.endpoint, secret, previous_secret_expires_at: expiresAt }
          return result
        }
        case "SecretChanged":
          if (round >= MAX_ROTATION_ROUNDS) return yield* Effect.die(new Error("webhook secret rotation: the secret kept changing"))
      }
    }
  })

  const deliveries = Effect.fn("WebhookEndpoints.deliveries")(function* (
    organizationId: OrganizationId,
    id: WebhookEndpointId,
    params: WebhookDeliveryListParams
  ) {
    yield* requireKey
    const binding = recordListCursorBinding(organizationId, DELIVERIES_SCOPE, id)
    const read = readCursorPageParams<string>(
      params,
      binding,
      "cursor is not valid for this endpoint: use the next_cursor of a page of its deliveries"
    )
    if ("issues" in read) return yield* new InvalidInput({ issues: read.issues })
    const { limit, after } = read.query
    const rows = yield* storage.webhooks.listAttempts(
      organizationId,
      id,
      after === null ? null : { attempted_at: after.value, id: after.uuid },
      limit + 1
    )
    if (Option.isNone(rows)) return yield* endpointNotFound(id)
    const page = cursorPage(rows.value, limit, (last) => encodeCursor(binding, { value: last.attempted_at, uuid: last.id }))
    const list: WebhookDeliveryList = { deliveries: page.items, pagination: page.pagination }
    return list
  })

  const retry = Effect.fn("WebhookEndpoints.retry")(function* (
    organizationId: OrganizationId,
    endpointId: WebhookEndpointId,
    deliveryId: string
  ) {
    yield* requireKey
    const now = yield* nowIso
    if (yield* storage.webhooks.retryDelivery(organizationId, endpointId, deliveryId, now)) return
    // Refused: say why (no such endpoint, a disabled one, or no such delivery of it).
    const stored = yield* found(organizationId, endpointId)
    if (!stored.endpoint.enabled) return yield* new WebhookEndpointDisabled({ uuid: endpointId })
    return yield* new RecordNotFound({ missing: [{ resource: "webhook_delivery", uuid: deliveryId }] })
  })

  const service: WebhookEndpointsService = {
    create,
    list: (organizationId) => Effect.zipRight(requireKey, storage.webhooks.listEndpoints(organizationId)),
    get: (organizationId, id) =>
      Effect.zipRight(
        requireKey,
        Effect.map(found(organizationId, id), (stored) => stored.endpoint)
      ),
    update,
    remove: (organizationId, id) =>
      Effect.zipRight(
        requireKey,
        Effect.flatMap(storage.webhooks.deleteEndpoint(organizationId, id), (deleted) =>
          deleted ? Effect.void : Effect.fail(endpointNotFound(id))
        )
      ),
    rotateSecret,
    deliveries,
    retry
  }
  return service
})

/**
 * The checked fields of a create or update input, or `InvalidInput` with every issue. For
 * `create`, `url` is required; for `update`, at least one field must be given.
 */
const readFields = (
  input: unknown,
  mode: "create" | "update"
): Effect.Effect<WebhookEndpointPatch, InvalidInput> => {
  const collector = new IssueCollector()
  const fields: { -readonly [K in keyof WebhookEndpointPatch]: WebhookEndpointPatch[K] } = {}
  const record = isRecord(input) ? input : {}
  if (!isRecord(input)) collector.add("invalid_type", "body", "the input must be an object")
  if (mode === "create" || record.url !== undefined) {
    const url = collector.requiredText("url", record.url, MAX_WEBHOOK_URL_LENGTH)
    if (url !== "") fields.url = url
  }
  if (record.events !== undefined) fields.events = readEvents(collector, record.events)
  if (record.description !== undefined) {
    fields.description = collector.optionalText("description", record.description, MAX_WEBHOOK_DESCRIPTION_LENGTH)
  }
  if (mode === "update" && record.enabled !== undefined) {
    if (typeof record.enabled === "boolean") fields.enabled = record.enabled
    else collector.add("invalid_type", "enabled", "enabled must be true or false")
  }
  if (
    mode === "update" &&
    isRecord(input) &&
    record.url === undefined &&
    record.events === undefined &&
    record.description === undefined &&
    record.enabled === undefined
  ) {
    collector.add("required", "body", "Give at least one of url, events, description, enabled")
  }
  return collector.issues.length === 0 ? Effect.succeed(fields) : Effect.fail(new InvalidInput({ issues: collector.issues }))
}

/** `events`: `null` (every type), or a non-empty array of distinct known types. */
const readEvents = (collector: IssueCollector, value: unknown): ReadonlyArray<WebhookEventType> | null => {
  if (value === null) return null
  if (!Array.isArray(value)) {
    collector.add("invalid_type", "events", "events must be an array of event types, or null for every type")
    return null
  }
  if (value.length === 0) {
    collector.add("required", "events", "events must name at least one event type, or be null for every type")
    return null
  }
  const seen = new Set<WebhookEventType>()
  value.forEach((item, index) => {
    const field = `events[${index}]`
    if (typeof item !== "string") collector.add("invalid_type", field, `${field} must be a string`)
    else if (!(WEBHOOK_EVENT_TYPES as ReadonlyArray<string>).includes(item)) {
      collector.add("invalid_format", field, `${field} '${item}' is not an event type: one of ${WEBHOOK_EVENT_TYPES.join(", ")}`)
    } else if (seen.has(item as WebhookEventType)) {
      collector.add("invalid_format", field, `${field} '${item}' is listed twice`)
    } else seen.add(item as WebhookEventType)
  })
  return [...seen]
}
