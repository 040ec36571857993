import { Context, Effect, Layer, Option } from "effect"
import { type ChannelTemplateSync, channelTemplateSyncOf } from "../model/templateSyncs.js"
import { type InvalidInput, RecordNotFound } from "../model/commonErrors.js"
import { nowIso } from "../internal/time.js"
import type { OrganizationId } from "../model/organizations.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { StorageError } from "../storage/errors.js"
import type { ChannelQueueFigures } from "../storage/OutboxRepository.js"
import { Storage, type StorageService } from "../storage/Storage.js"
import { ChannelVerifier, type ChannelVerifierService } from "./ChannelVerifier.js"
import {
  ChannelLimitReached,
  ChannelPhoneNumberIdTaken,
  ChannelVerificationFailed,
  SecretKeyMismatch,
  SecretKeyMissing
} from "../model/channelErrors.js"
import {
  type Channel,
  type ChannelId,
  type ChannelInput,
  type ChannelOwner,
  type ChannelUpdateInput,
  type ChannelWithToken,
  MAX_CHANNELS_PER_ORGANIZATION
} from "../model/channels.js"
import { displayNumberOf, readChannelInput, readChannelUpdate } from "./readChannelInput.js"
import { openSecret, sealSecret } from "../common/secretBox.js"
import { checkStoredKey, claimKeyCheck } from "../common/secretKeyCheck.js"
import { decryptionKeysOf, SecretKey } from "../common/SecretKey.js"

/**
 * Channels: each organization's own WhatsApp numbers (docs/channels.md). Managing them
 * (`add`, `get`, `update`, `list`, `remove`, `getWithToken`) needs the {@link SecretKey}; without one they
 * fail with `SecretKeyMissing`. The look-ups by `phone_number_id` and `waba_id` read
 * across organizations (webhook routing) and need no key.
 *
 * @category services
 */
export interface ChannelsService {
  /**
   * Connects a number: checks the input (`InvalidInput`), proves with the
   * {@link ChannelVerifier} that the token may use it (`ChannelVerificationFailed`), takes
   * `display_phone_number` from Meta's answer when not given, encrypts the token and
   * stores the channel. A `phone_number_id` connected anywhere → `ChannelPhoneNumberIdTaken`;
   * an organization with {@link MAX_CHANNELS_PER_ORGANIZATION} channels → `ChannelLimitReached`.
   */
  readonly add: (
    organizationId: OrganizationId,
    input: ChannelInput
  ) => Effect.Effect<
    Channel,
    | InvalidInput
    | ChannelVerificationFailed
    | ChannelPhoneNumberIdTaken
    | ChannelLimitReached
    | SecretKeyMissing
    | SecretKeyMismatch
    | StorageError
  >
  /** The organization's channels, oldest first: the first is its default. */
  readonly list: (organizationId: OrganizationId) => Effect.Effect<ReadonlyArray<Channel>, SecretKeyMissing | StorageError>
  /** The organization's channel with this uuid; unknown (or another organization's) → `RecordNotFound`. */
  readonly get: (
    organizationId: OrganizationId,
    id: ChannelId
  ) => Effect.Effect<Channel, RecordNotFound | SecretKeyMissing | StorageError>
  /**
   * Changes a channel's `access_token` and/or `throughput_mps` (docs/channels.md): checks
   * the input (`InvalidInput`), proves a new token with the {@link ChannelVerifier} like
   * `add` (`ChannelVerificationFailed`, nothing written), then writes both fields, sealed
   * token and `access_token_last4` in one atomic store write. A new token also resumes a
   * `paused` channel (as `resume`). An empty input writes nothing and answers the channel
   * as it is. Unknown channel → `RecordNotFound`.
   */
  readonly update: (
    organizationId: OrganizationId,
    id: ChannelId,
    input: ChannelUpdateInput
  ) => Effect.Effect<
    Channel,
    InvalidInput | ChannelVerificationFailed | RecordNotFound | SecretKeyMissing | SecretKeyMismatch | StorageError
  >
  /**
   * Resumes a `paused` channel (`POST /channels/{uuid}/resume`, docs/channels.md "Pause and
   * resume"): `active` again, its waiting messages due now, event `channel.resumed`. An
   * `active` channel is answered as it is. Unknown channel → `RecordNotFound`.
   */
  readonly resume: (
    organizationId: OrganizationId,
    id: ChannelId
  ) => Effect.Effect<Channel, RecordNotFound | SecretKeyMissing | StorageError>
  /**
   * The channel's send queue figures (`GET /channels/{uuid}`): its messages `queued` and
   * `sending`, and when the oldest queued one was created. Unknown channel → `RecordNotFound`.
   */
  readonly queue: (
    organizationId: OrganizationId,
    id: ChannelId
  ) => Effect.Effect<ChannelQueueFigures, RecordNotFound | SecretKeyMissing | StorageError>
  /**
   * The last template sync of the channel's WhatsApp Business Account (`GET
   * /channels/{uuid}`, docs/channels.md "Template sync"): `{last_run_at, outcome, error}`,
   * every field `null` before the first run. Unknown channel → `RecordNotFound`.
   */
  readonly templateSync: (
    organizationId: OrganizationId,
    id: ChannelId
  ) => Effect.Effect<ChannelTemplateSync, RecordNotFound | SecretKeyMissing | StorageError>
  /**
   * Disconnects a channel (its encrypted token is deleted with it; its waiting messages
   * fail with code `channel_removed`); unknown → `RecordNotFound`.
   */
  readonly remove: (
    organizationId: OrganizationId,
    id: ChannelId
  ) => Effect.Effect<void, RecordNotFound | SecretKeyMissing | StorageError>
  /** The channel of a `phone_number_id`, with its organization, whichever that is. */
  readonly findByPhoneNumberId: (phoneNumberId: string) => Effect.Effect<Option.Option<ChannelOwner>, StorageError>
  /** The channels of a WhatsApp Business Account, with their organizations, oldest first. */
  readonly findByWabaId: (wabaId: string) => Effect.Effect<ReadonlyArray<ChannelOwner>, StorageError>
  /** The organization's default channel: the first added that still exists. */
  readonly defaultChannel: (organizationId: OrganizationId) => Effect.Effect<Option.Option<Channel>, StorageError>
  /**
   * A channel with its decrypted access token, for sending through it. Internal: never
   * answer it over HTTP or log it. A token that does not open under the key →
   * `SecretKeyMismatch`.
   */
  readonly getWithToken: (
    organizationId: OrganizationId,
    id: ChannelId
  ) => Effect.Effect<ChannelWithToken, RecordNotFound | SecretKeyMissing | SecretKeyMismatch | StorageError>
}

/**
 * Tag of the {@link ChannelsService}. `Channels.layer` needs `Storage` and
 * `SecureRandom`, and reads {@link SecretKey} and {@link ChannelVerifier} (both have
 * defaults). With a key, building it checks the key against the store's check value and
 * fails with `SecretKeyMismatch` when it is another key.
 *
 * @category services
 * @example
 * import { Effect } from "effect"
 * import { Channels, type OrganizationId } from "@switchboard/core"
 *
 * const connect = (organizationId: OrganizationId, access_token: string) =>
 *   Effect.flatMap(Channels, (channels) =>
 *     channels.add(organizationId, { phone_number_id: "106540352242922", waba_id: "102290129340398", access_token })
 *   )
 */
export class Channels extends Context.Tag("@switchboard/core/Channels")<Channels, ChannelsService>() {
  static readonly layer: Layer.Layer<Channels, SecretKeyMismatch | StorageError, Storage | SecureRandom> = Layer.effect(
    Channels,
    Effect.suspend(() => make)
  )
}

/** How many opened channel tokens `getWithToken` keeps (more channels: the cache starts over). */
const OPENED_TOKENS_CACHE_SIZE = 1_000

const notFound = (id: string) => new RecordNotFound({ missing: [{ resource: "channel", uuid: id }] })

const make = Effect.gen(function* () {
  const storage = yield* Storage
  const random = yield* SecureRandom
  const secretKeyValue = yield* SecretKey
  const { key } = secretKeyValue
  // Every configured key opens a token (the first seals): docs/deployment.md "Rotating the secret key".
  const keys = decryptionKeysOf(secretKeyValue)
  const verifier = yield* ChannelVerifier
  if (key !== undefined) yield* checkStoredKey(storage, keys)
  const requireKey: Effect.Effect<Uint8Array, SecretKeyMissing> =
    key === undefined ? Effect.fail(new SecretKeyMissing()) : Effect.succeed(key)

  const add = Effect.fn("Channels.add")(function* (organizationId: OrganizationId, input: ChannelInput) {
    const secretKey = yield* requireKey
    const fields = yield* readChannelInput(input)
    const verified = yield* verifier.verify({ phone_number_id: fields.phone_number_id, access_token: fields.access_token })
    const display = fields.display_phone_number ?? Option.getOrNull(Option.flatMap(Option.fromNullable(verified.display_phone_number), displayNumberOf))
    if (display === null) {
      return yield* new ChannelVerificationFailed({
        phone_number_id: fields.phone_number_id,
        reason: "Meta's answer has no usable display_phone_number; give display_phone_number"
      })
    }
    // The first channel stores the key's check value; a different key claimed it first → mismatch.
    yield* claimKeyCheck(storage, keys)
    const now = yield* nowIso
    const channel: Channel = {
      uuid: (yield* random.uuid()) as ChannelId,
      provider: "whatsapp_cloud",
      phone_number_id: fields.phone_number_id,
      display_phone_number: display,
      waba_id: fields.waba_id,
      access_token_set: true,
      access_token_last4: fields.access_token.slice(-4),
      throughput_mps: fields.throughput_mps,
      status: "active",
      paused_reason: null,
      paused_at: null,
      created_at: now,
      updated_at: now
    }
    const sealed = sealSecret(secretKey, fields.access_token)
    const outcome = yield* storage.channels.insert(organizationId, { channel, access_token_sealed: sealed }, MAX_CHANNELS_PER_ORGANIZATION)
    switch (outcome._tag) {
      case "Inserted":
        return outcome.channel
      case "PhoneNumberIdTaken":
        return yield* new ChannelPhoneNumberIdTaken({ phone_number_id: fields.phone_number_id })
      case "LimitReached":
        return yield* new ChannelLimitReached({ limit: outcome.limit })
    }
  })

  const get = Effect.fn("Channels.get")(function* (organizationId: OrganizationId, id: ChannelId) {
    yield* requireKey
    const stored = yield* storage.channels.findById(organizationId, id)
    if (Option.isNone(stored)) return yield* notFound(id)
    return stored.value.channel
  })

  const update = updateChannel({ storage, verifier, requireKey, get })

  // Tokens opened before, by their sealed text (a new token is sealed anew, with a new
  // nonce, so a changed token is never answered from here): the send queue opens a channel
  // per message, and AES-GCM per message was a measurable part of dispatch
  // (docs/benchmarks.md "Outbound dispatch"). Bounded; emptied when full.
  const openedTokens = new Map<string, string>()
  const openToken = (sealed: string): Option.Option<string> => {
    const known = openedTokens.get(sealed)
    if (known !== undefined) return Option.some(known)
    const token = openSecret(keys, sealed)
    if (Option.isSome(token)) {
      if (openedTokens.size >= OPENED_TOKENS_CACHE_SIZE) openedTokens.clear()
      openedTokens.set(sealed, token.value)
    }
    return token
  }

  // Untraced (no span, no call-site stack): the send queue calls it for every message, and
  // `Effect.fn`'s span and stack capture cost 27–29 µs of CPU per call alone, more on the
  // dispatcher's busy heap (docs/benchmarks.md "Outbound dispatch").
  const getWithToken = Effect.fnUntraced(function* (organizationId: OrganizationId, id: ChannelId) {
    yield* requireKey
    const stored = yield* storage.channels.findById(organizationId, id)
    if (Option.isNone(stored)) return yield* notFound(id)
    const token = openToken(stored.value.access_token_sealed)
    if (Option.isNone(token)) return yield* new SecretKeyMismatch()
    const result: ChannelWithToken = { organization_id: organizationId, channel: stored.value.channel, access_token: token.value }
    return result
  })

  const resume = Effect.fn("Channels.resume")(function* (organizationId: OrganizationId, id: ChannelId) {
    yield* requireKey
    const resumed = yield* storage.outbox.resumeChannel(organizationId, id, yield* nowIso)
    if (Option.isNone(resumed)) return yield* notFound(id)
    return resumed.value.channel
  })

  const queue = Effect.fn("Channels.queue")(function* (organizationId: OrganizationId, id: ChannelId) {
    yield* get(organizationId, id)
    return yield* storage.outbox.channelQueue(organizationId, id)
  })

  const templateSync = Effect.fn("Channels.templateSync")(function* (organizationId: OrganizationId, id: ChannelId) {
    const channel = yield* get(organizationId, id)
    const sync = yield* storage.templateSyncs.get(organizationId, channel.waba_id)
    return channelTemplateSyncOf(Option.getOrUndefined(sync))
  })

  const service: ChannelsService = {
    add,
    get,
    update,
    resume,
    queue,
    templateSync,
    list: (organizationId) => Effect.zipRight(requireKey, storage.channels.list(organizationId)),
    remove: (organizationId, id) =>
      Effect.zipRight(
        requireKey,
        Effect.flatMap(storage.channels.delete(organizationId, id), (deleted) => (deleted ? Effect.void : Effect.fail(notFound(id))))
      ),
    findByPhoneNumberId: (phoneNumberId) =>
      Effect.map(storage.channels.findByPhoneNumberId(phoneNumberId), Option.map(ownerOf)),
    findByWabaId: (wabaId) => Effect.map(storage.channels.findByWabaId(wabaId), (rows) => rows.map(ownerOf)),
    defaultChannel: (organizationId) => Effect.map(storage.channels.list(organizationId), (channels) => Option.fromNullable(channels[0])),
    getWithToken
  }
  return service
})

const ownerOf = (stored: { readonly organization_id: OrganizationId; readonly channel: Channel }): ChannelOwner => ({
  organization_id: stored.organization_id,
  channel: stored.channel
})

/**
 * `Channels.update` over the service's parts: checks the input, reads the channel
 * (`RecordNotFound`), verifies a new token with Meta before anything is written, then writes
 * the given fields, sealed token and `access_token_last4` in one store write. An empty input
 * answers the channel unchanged.
 */
const updateChannel = (parts: {
  readonly storage: StorageService
  readonly verifier: ChannelVerifierService
  readonly requireKey: Effect.Effect<Uint8Array, SecretKeyMissing>
  readonly get: ChannelsService["get"]
}) =>
  Effect.fn("Channels.update")(function* (organizationId: OrganizationId, id: ChannelId, input: ChannelUpdateInput) {
    const { get, requireKey, storage, verifier } = parts
    const secretKey = yield* requireKey
    const fields = yield* readChannelUpdate(input)
    const current = yield* get(organizationId, id)
    if (fields.access_token === undefined && fields.throughput_mps === undefined) return current
    if (fields.access_token !== undefined) {
      yield* verifier.verify({ phone_number_id: current.phone_number_id, access_token: fields.access_token })
    }
    const updated = yield* storage.channels.update(organizationId, id, {
      ...(fields.throughput_mps === undefined ? {} : { throughput_mps: fields.throughput_mps }),
      ...(fields.access_token === undefined
        ? {}
        : { access_token: { sealed: sealSecret(secretKey, fields.access_token), last4: fields.access_token.slice(-4) } }),
      updated_at: yield* nowIso
    })
    if (Option.isNone(updated)) return yield* notFound(id)
    if (fields.access_token === undefined || updated.value.status === "active") return updated.value
    const resumed = yield* storage.outbox.resumeChannel(organizationId, id, yield* nowIso)
    return Option.isNone(resumed) ? yield* notFound(id) : resumed.value.channel
  })
