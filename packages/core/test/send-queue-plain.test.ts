import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Logger, LogLevel, Option } from "effect"
import {
  type ChannelId,
  Channels,
  ChannelVerifier,
  Core,
  DEFAULT_SEND_QUEUE_SETTINGS,
  HAND_OVER_GAP_MS,
  generateSecretKey,
  MemoryStorage,
  type MessageId,
  MessageTransport,
  type OrganizationId,
  Organizations,
  type OutboundMessage,
  runSendDispatcher,
  SecretKey,
  SendQueueSettings,
  sendWithPromise,
  Storage,
  TransportFailed,
  type TransportReceipt,
  withPromise
} from "@switchboard/core"
import { handOverWindowOf, recordHandOver } from "../src/messaging/handOverWindow.js"

// The send queue's message without a fiber (docs/benchmarks.md "A message without a
// fiber"): on the live clock, a template through a channel the dispatcher keeps open is
// handed over by the transport's promise form and recorded by the store's promise form;
// what it does not take, and every failure, goes on through the fiber's code.

/** A transport whose `send.promise` answers `answer` (calls counted); its Effect `send` is counted apart. */
const makeTransport = (answer: (message: OutboundMessage, call: number) => Promise<TransportReceipt>) => {
  const promiseCalls: Array<OutboundMessage> = []
  const effectCalls: Array<OutboundMessage> = []
  const transport = {
    send: sendWithPromise(
      (message: OutboundMessage) => Effect.sync(() => void effectCalls.push(message)).pipe(Effect.zipRight(Effect.never)),
      (message: OutboundMessage) => {
        promiseCalls.push(message)
        return answer(message, promiseCalls.length)
      }
    )
  }
  return { transport, promiseCalls, effectCalls }
}

/**
 * The memory store with its `outbox.record` calls counted by form; with `lean`, it also has
 * `outbox.recordSent` (through the same write, answering the status), counted as `lean`.
 */
const countedStore = (lean = false) => {
  const records = { promise: 0, effect: 0, lean: 0 }
  const layer = Layer.effect(
    Storage,
    Effect.map(Storage, (storage) => ({
      ...storage,
      outbox: {
        ...storage.outbox,
        ...(lean
          ? {
            recordSent: (...args: Parameters<NonNullable<typeof storage.outbox.recordSent>>) => {
              records.lean++
              return storage.outbox.record.promise!(...args).then(Option.map((message) => message.status))
            }
          }
          : {}),
        record: withPromise(
          (...args: Parameters<typeof storage.outbox.record>) => {
            records.effect++
            return storage.outbox.record(...args)
          },
          (...args: Parameters<typeof storage.outbox.record>) => {
            records.promise++
            return storage.outbox.record.promise!(...args)
          }
        )
      }
    }))
  ).pipe(Layer.provide(MemoryStorage.layer))
  return { records, layer }
}

const verifier = Layer.succeed(ChannelVerifier, { verify: () => Effect.succeed({ display_phone_number: "+1 555-078-3881" }) })

const MESSAGES = 12

/**
 * An organization, a channel of 50 messages/s and `MESSAGES` queued template messages
 * through it (written as an auto-reply is: in the send queue, unclaimed); their ids.
 */
const queueBacklog = Effect.gen(function*() {
  const org = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" }))
  const channel = yield* Effect.flatMap(Channels, (channels) =>
    channels.add(org.id, { phone_number_id: "106540352280001", waba_id: "102290129340398", access_token: "EAAGplainpath00000000001", throughput_mps: 50 }))
  const storage = yield* Storage
  const now = new Date().toISOString()
  const phones = Array.from({ length: MESSAGES }, (_, n) => `+1415${String(3000000 + n).padStart(7, "0")}`)
  const imported = yield* storage.contacts.importBulk(org.id, {
    rows: phones.map((phone) => ({ phone, phone_valid: true, details: {}, groups: [] })),
    ids: phones.map(() => crypto.randomUUID()),
    contactsLimit: null,
    now,
    events: false
  })
  if (imported._tag !== "Imported") throw new Error(`import: ${imported._tag}`)
  const ids: Array<string> = []
  for (const [n, contact] of imported.result.contacts.entries()) {
    const uuid = crypto.randomUUID()
    ids.push(uuid)
    yield* storage.chats.appendMessage(org.id, {
      contact: { _tag: "ById", uuid: contact.uuid },
      newChat: { uuid: crypto.randomUUID(), status: "open" },
      message: {
        uuid,
        direction: "outbound",
        type: "template",
        text: `Order ${n}`,
        template: { name: "order_update", language: { code: "en_US" }, components: [] },
        media: null,
        content: null,
        status: "queued",
        provider_message_id: null,
        failure: null,
        channel_uuid: channel.uuid as ChannelId,
        attempts: 0,
        next_attempt_at: null,
        broadcast_uuid: null,
        created_at: now,
        updated_at: now
      },
      unreadIncrement: 0,
      reopen: { from: [], to: "open" },
      dedupe: false,
      now,
      outbox: { to: phones[n]!, class: "single", expires_at: new Date(Date.now() + 3_600_000).toISOString(), claim: null }
    } as never)
  }
  return { organizationId: org.id, ids }
})

/** The messages' stored statuses and failure codes, in order. */
const storedOf = (organizationId: OrganizationId, ids: ReadonlyArray<string>) =>
  Effect.flatMap(Storage, (storage) =>
    Effect.forEach(ids, (id) =>
      Effect.map(storage.chats.findMessage(organizationId, id as MessageId), (found) => Option.getOrThrow(found))))

/** Runs the dispatcher until every message is settled (not `queued` nor `sending`), then stops it. */
const dispatchUntilSettled = (organizationId: OrganizationId, ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const dispatcher = yield* Effect.fork(runSendDispatcher({ pollIntervalMs: 50 }))
    for (let waited = 0; waited < 10_000; waited += 20) {
      const stored = yield* storedOf(organizationId, ids)
      if (stored.every((message) => message.status !== "queued" && message.status !== "sending")) break
      yield* Effect.sleep(20)
    }
    yield* Fiber.interrupt(dispatcher)
    return yield* storedOf(organizationId, ids)
  })

const run = <A, E>(transport: MessageTransport["Type"], body: Effect.Effect<A, E, Layer.Layer.Success<typeof Core.layer> | Storage>, lean = false) => {
  const store = countedStore(lean)
  const layer = Core.layerWithTransport(Layer.succeed(MessageTransport, transport)).pipe(
    Layer.provide(Layer.merge(SecretKey.layer(generateSecretKey()), verifier)),
    Layer.provideMerge(store.layer)
  )
  return Effect.map(Effect.provide(body, layer), (value) => ({ value, records: store.records }))
}

describe("the send queue's message without a fiber (live clock)", () => {
  it.live("templates through a kept channel go out by the transport's promise and are recorded by the store's: each sent once, the Effect send never called", () =>
    Effect.gen(function*() {
      const meta = makeTransport((message) => Promise.resolve({ provider_message_id: `wamid.${message.message_id}`, status: "sent" }))
      const { value: stored, records } = yield* run(meta.transport, Effect.flatMap(queueBacklog, ({ organizationId, ids }) => dispatchUntilSettled(organizationId, ids)))
      expect(stored.map((message) => message.status)).toEqual(Array(MESSAGES).fill("sent"))
      expect(stored.map((message) => message.provider_message_id)).toEqual(stored.map((message) => `wamid.${message.uuid}`))
      expect(new Set(meta.promiseCalls.map((message) => message.message_id)).size).toBe(MESSAGES)
      expect(meta.promiseCalls).toHaveLength(MESSAGES)
      expect(meta.effectCalls).toHaveLength(0)
      // The first message opens the channel in its fiber; those started after it is kept take the plain path.
      expect(records.promise).toBeGreaterThanOrEqual(MESSAGES / 2)
      expect(records.promise + records.effect).toBeGreaterThanOrEqual(MESSAGES)
    }))

  it.live("where the store has outbox.recordSent, the plain path records each sent message through it, not record's promise form", () =>
    Effect.gen(function*() {
      const meta = makeTransport((message) => Promise.resolve({ provider_message_id: `wamid.${message.message_id}`, status: "sent" }))
      const { value: stored, records } = yield* run(meta.transport, Effect.flatMap(queueBacklog, ({ organizationId, ids }) => dispatchUntilSettled(organizationId, ids)), true)
      expect(stored.map((message) => message.status)).toEqual(Array(MESSAGES).fill("sent"))
      expect(records.lean).toBeGreaterThanOrEqual(MESSAGES / 2)
      expect(records.promise).toBe(0)
      expect(records.lean + records.effect).toBeGreaterThanOrEqual(MESSAGES)
    }))

  // The hand-over window (docs/channels.md "Throughput"): the plain path consults it as
  // a fiber's attempt does. A hand-over of the channel recorded just now for a slot 2 s ago
  // (one that went late) holds every message back until HAND_OVER_GAP_MS after it.
  it.live("the plain path holds a message back by its channel's hand-over window", () =>
    Effect.gen(function*() {
      const times: Array<number> = []
      const meta = makeTransport((message) => {
        times.push(Date.now())
        return Promise.resolve({ provider_message_id: `wamid.${message.message_id}`, status: "sent" })
      })
      let recordedAt = 0
      const { value: stored, records } = yield* run(meta.transport, Effect.flatMap(queueBacklog, ({ organizationId, ids }) =>
        Effect.flatMap(storedOf(organizationId, ids), (before) => {
          recordedAt = Date.now()
          recordHandOver(handOverWindowOf(meta.transport), before[0]!.channel_uuid!, recordedAt - 2_000, recordedAt)
          return dispatchUntilSettled(organizationId, ids)
        })))
      expect(stored.map((message) => message.status)).toEqual(Array(MESSAGES).fill("sent"))
      expect(Math.min(...times)).toBeGreaterThanOrEqual(recordedAt + HAND_OVER_GAP_MS)
      expect(records.promise).toBeGreaterThanOrEqual(MESSAGES / 2)
    }))

  it.live("a refusal of the plain path's send is classed as a fiber's is: permanent → failed with Meta's code, no retry; the rest sent", () =>
    Effect.gen(function*() {
      const meta = makeTransport((message, call) =>
        call % 3 === 0
          ? Promise.reject(new TransportFailed({ reason: "Recipient cannot be reached", provider_code: "131026", http_status: 400 }))
          : Promise.resolve({ provider_message_id: `wamid.${message.message_id}`, status: "sent" }))
      const { value: stored } = yield* run(meta.transport, Effect.flatMap(queueBacklog, ({ organizationId, ids }) => dispatchUntilSettled(organizationId, ids)))
      const refused = new Set(meta.promiseCalls.filter((_, index) => (index + 1) % 3 === 0).map((message) => message.message_id))
      expect(refused.size).toBe(MESSAGES / 3)
      for (const message of stored) {
        if (refused.has(message.uuid)) expect(message).toMatchObject({ status: "failed", failure: { code: "131026" }, attempts: 1 })
        else expect(message).toMatchObject({ status: "sent", attempts: 1 })
      }
      expect(meta.promiseCalls).toHaveLength(MESSAGES)
      expect(meta.effectCalls).toHaveLength(0)
    }))

  it.live("a send with no answer within the timeout ends Unknown through the fiber's code (sending, due again after the settle time)", () =>
    Effect.gen(function*() {
      const meta = makeTransport(() => new Promise<TransportReceipt>(() => undefined))
      const { value: stored } = yield* run(
        meta.transport,
        Effect.flatMap(queueBacklog, ({ organizationId, ids }) =>
          Effect.gen(function*() {
            const dispatcher = yield* Effect.fork(runSendDispatcher({ pollIntervalMs: 50 }))
            yield* Effect.sleep(900)
            yield* Fiber.interrupt(dispatcher)
            return yield* storedOf(organizationId, ids)
          }))
      ).pipe(Effect.provideService(SendQueueSettings, { ...DEFAULT_SEND_QUEUE_SETTINGS, timeoutMs: 100 }), Logger.withMinimumLogLevel(LogLevel.Error))
      // Every message was handed over once and none answered: an attempt of unknown outcome each.
      expect(meta.promiseCalls.length).toBeGreaterThan(0)
      for (const message of stored.filter((each) => meta.promiseCalls.some((call) => call.message_id === each.uuid))) {
        expect(message).toMatchObject({ status: "sending", attempts: 1 })
      }
    }))
})
