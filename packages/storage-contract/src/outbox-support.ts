import { expect } from "@effect/vitest"
import { Effect, Option } from "effect"
import {
  type Channel,
  type ClaimedMessage,
  type ContactId,
  type Message,
  type MessageFailure,
  type MessageId,
  type OrganizationId,
  type OutboxOutcome,
  type OutboxPlacement,
  type SendClass,
  Storage,
  type TransportKind
} from "@switchboard/core"
import { append, outboundRequest } from "./chat-support.js"
import * as fixtures from "./fixtures.js"
import { importContact } from "./support.js"
import { addEndpoint, claim as claimDeliveries } from "./webhook-support.js"

// Effectful helpers of the send queue's contract (outbox.ts; not exported from the package).
// Times: `T0` is `instant(0)` in epoch ms; `at(ms)` the ISO 8601 instant `ms` after it.

/** `instant(0)` in epoch ms: the origin of every time of the send queue's tests. */
export const T0 = Date.parse(fixtures.instant(0))

/** The ISO 8601 instant `ms` milliseconds after {@link T0} (`Date#toISOString`, so fractions are cut). */
export const at = (ms: number): string => new Date(T0 + ms).toISOString()

/** How long a claim's lease lasts (ms). */
export const LEASE_MS = 30_000
/** The settle time of claims (ms): a claimed message is due again `LEASE_MS + SETTLE_MS` after its claim. */
export const SETTLE_MS = 60_000
/** Far after every test's times: messages expire then unless a test says otherwise. */
export const NEVER_EXPIRES = fixtures.instant(10_000)

/** A recipient: a contact of the organization and its phone (the lane's `to`). */
export interface Recipient {
  readonly id: ContactId
  readonly phone: string
}

/** A new contact with `phone(n)`: a recipient of its own lanes. */
export const recipient = (organizationId: OrganizationId, n: number) =>
  Effect.map(importContact(organizationId, fixtures.phone(n)), (id): Recipient => ({ id, phone: fixtures.phone(n) }))

/** Options of {@link enqueue}. */
export interface EnqueueOptions {
  /** The channel of the message; default none. */
  readonly channel?: Channel
  /** Default `single`. */
  readonly class?: SendClass
  /** The creation time, ms after {@link T0}; default 0. */
  readonly at?: number
  /**
   * The inline first attempt: `null` (the default) never claims; a lease token tries to claim
   * (`bypass` false) until `at + LEASE_MS`; `{ bypass: lease }` always claims.
   */
  readonly claim?: string | { readonly bypass: string } | null
  readonly expiresAt?: string
  readonly broadcastUuid?: string | null
  /** The message's `transport`; default: `whatsapp` with a channel, else `recording`. */
  readonly transport?: TransportKind | null
  /** A scheduled send: `notBefore` this many ms after {@link T0} (then `claim` is ignored). */
  readonly sendAt?: number
}

/** The `OutboxPlacement` of {@link enqueue}. */
export const placement = (to: Recipient, options: EnqueueOptions = {}): OutboxPlacement => {
  const now = T0 + (options.at ?? 0)
  const claim = options.claim ?? null
  if (options.sendAt !== undefined) {
    return {
      to: to.phone,
      class: options.class ?? "single",
      expires_at: options.expiresAt ?? NEVER_EXPIRES,
      claim: null,
      notBefore: at(options.sendAt)
    }
  }
  return {
    to: to.phone,
    class: options.class ?? "single",
    expires_at: options.expiresAt ?? NEVER_EXPIRES,
    claim:
      claim === null
        ? null
        : typeof claim === "string"
          ? { lease: claim, leaseUntil: now + LEASE_MS, settleMs: SETTLE_MS, bypass: false }
          : { lease: claim.bypass, leaseUntil: now + LEASE_MS, settleMs: SETTLE_MS, bypass: true }
  }
}

/** Creates an outbound text message to `to` in the send queue (`appendMessage` with `outbox`); returns it as stored. */
export const enqueue = (organizationId: OrganizationId, to: Recipient, options: EnqueueOptions = {}) =>
  Effect.gen(function* () {
    const request = outboundRequest(to.id, {
      now: at(options.at ?? 0),
      channelUuid: options.channel?.uuid ?? null,
      ...(options.transport === undefined ? {} : { transport: options.transport })
    })
    const message = { ...request.message, broadcast_uuid: options.broadcastUuid ?? null }
    const outcome = yield* append(organizationId, { ...request, message, outbox: placement(to, options) })
    return outcome.message
  })

/** Options of {@link claimAt}. */
export interface ClaimOptions {
  readonly lease?: string
  readonly limit?: number
  /** Default 1 000 ms. */
  readonly horizonMs?: number
}

/** `outbox.claim` at `ms` after {@link T0}, leased for {@link LEASE_MS}. */
export const claimAt = (ms: number, options: ClaimOptions = {}) =>
  Effect.flatMap(Storage, ({ outbox }) =>
    outbox.claim({
      now: T0 + ms,
      lease: options.lease ?? fixtures.uuid(),
      leaseUntil: T0 + ms + LEASE_MS,
      settleMs: SETTLE_MS,
      limit: options.limit ?? 100,
      horizonMs: options.horizonMs ?? 1_000
    })
  )

/** The uuids of claimed messages, in the order of the claim. */
export const idsOf = (claimed: ReadonlyArray<ClaimedMessage>): Array<MessageId> => claimed.map((c) => c.message.uuid)

/** Claims at `ms` and expects exactly the messages `expected` (any order); returns the claim. */
export const expectClaim = (ms: number, expected: ReadonlyArray<Message>, options: ClaimOptions = {}) =>
  Effect.gen(function* () {
    const claimed = yield* claimAt(ms, options)
    expect([...idsOf(claimed)].sort()).toEqual(expected.map((message) => message.uuid).sort())
    return claimed
  })

/** Claims at `ms` and expects exactly one message, `expected`; returns it as claimed. */
export const claimOnly = (ms: number, expected: Message, options: ClaimOptions = {}) =>
  Effect.map(expectClaim(ms, [expected], options), (claimed) => claimed[0]!)

/** `outbox.record` at `ms` after {@link T0}. */
export const recordAt = (ms: number, claimed: Pick<ClaimedMessage, "message" | "lease">, outcome: OutboxOutcome) =>
  Effect.flatMap(Storage, ({ outbox }) => outbox.record(claimed.message.uuid, claimed.lease, outcome, at(ms)))

/** `recordAt` that expects the outcome written; returns the message afterwards. */
export const recorded = (ms: number, claimed: Pick<ClaimedMessage, "message" | "lease">, outcome: OutboxOutcome) =>
  Effect.map(recordAt(ms, claimed, outcome), (written) => Option.getOrThrowWith(written, () => new Error("expected the outcome recorded")))

/** A `Sent` outcome. */
export const sent = (providerId: string | null = null, attempts = 1): OutboxOutcome => ({ _tag: "Sent", provider_message_id: providerId, attempts })

/** A `Requeued` outcome due at `ms` after {@link T0}. */
export const requeued = (
  ms: number,
  options: { readonly attempts?: number; readonly failure?: MessageFailure | null; readonly throttled?: boolean; readonly pairRate?: boolean } = {}
): OutboxOutcome => ({
  _tag: "Requeued",
  next_attempt_at: at(ms),
  failure: options.failure ?? null,
  attempts: options.attempts ?? 0,
  throttled: options.throttled ?? false,
  pairRate: options.pairRate ?? false
})

/** A provider's refusal. */
export const failure: MessageFailure = { code: "131026", title: "Message undeliverable" }

/** An account error of Meta: the reason a channel is paused. */
export const accountFailure: MessageFailure = { code: "131031", title: "Business account locked" }

/** The stored message, which must exist. */
export const messageOf = (organizationId: OrganizationId, id: MessageId) =>
  Effect.flatMap(Storage, ({ chats }) => chats.findMessage(organizationId, id)).pipe(
    Effect.map((found): Message => Option.getOrThrowWith(found, () => new Error(`message ${id} is missing`)))
  )

/** The stored channel record, which must exist. */
export const channelOf = (organizationId: OrganizationId, channel: Channel) =>
  Effect.flatMap(Storage, ({ channels }) => channels.findById(organizationId, channel.uuid)).pipe(
    Effect.map((found): Channel => Option.getOrThrowWith(found, () => new Error(`channel ${channel.uuid} is missing`)).channel)
  )

/**
 * Pauses `channel` the way a dispatcher does: a message to a recipient of its own, claimed
 * at once (`bypass`), recorded `Paused` at `ms`. Returns that message afterwards (`queued`).
 */
export const pauseChannel = (organizationId: OrganizationId, channel: Channel, ms = 0, n = 9_999) =>
  Effect.gen(function* () {
    const to = yield* recipient(organizationId, n)
    const message = yield* enqueue(organizationId, to, { channel, at: ms, claim: { bypass: "pausing" } })
    return yield* recorded(ms, { message, lease: "pausing" }, { _tag: "Paused", reason: accountFailure })
  })

/**
 * An endpoint of the organization subscribed to the send queue's event types only
 * (`message.status_updated`, `channel.paused`, `channel.resumed`; not `contact.created`,
 * which creating recipients writes).
 */
export const addOutboxEndpoint = (organizationId: OrganizationId) =>
  addEndpoint(organizationId, { events: ["message.status_updated", "channel.paused", "channel.resumed"] })

/**
 * When {@link writtenEvents} reads the webhook outbox: after every write of the tests,
 * `channels.delete`'s too (it is given no time: a store writes it at the wall clock's).
 */
const EVENTS_READ_AT = "2999-01-01T00:00:00.000Z"
const EVENTS_LEASE_UNTIL = "2999-01-01T00:00:01.000Z"

/**
 * The events written to the webhook outbox since the last read (after
 * {@link addOutboxEndpoint}): type and data, in a fixed order (type, then the data's uuid).
 */
export const writtenEvents = () =>
  Effect.map(claimDeliveries(EVENTS_READ_AT, EVENTS_LEASE_UNTIL), (deliveries) =>
    deliveries
      .map(({ event }) => ({ type: event.type, data: event.data as { readonly uuid: string } }))
      .sort((a, b) => (a.type === b.type ? (a.data.uuid < b.data.uuid ? -1 : 1) : a.type < b.type ? -1 : 1))
  )
