import { describe, expect, it } from "@effect/vitest"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect, Layer, Option, TestClock } from "effect"
import { afterAll, beforeAll } from "vitest"
import { startSimulator, textMessage, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import {
  type ChannelId,
  Channels,
  ChannelVerifier,
  type ChatId,
  Chats,
  classifyFailure,
  Core,
  generateSecretKey,
  MemoryStorage,
  Messaging,
  MessageTransport,
  type MessageTransportService,
  type OrganizationId,
  Organizations,
  recordingTransport,
  SecretKey,
  SendQueueSettings,
  Storage,
  TransportFailed,
  WhatsAppCloudTransport
} from "@switchboard/core"
import { failureOf } from "./failure.js"

// `Messaging.markChatRead` (docs/chats.md "Read receipts"): the local read always commits;
// the latest inbound message's read receipt is sent inline through its channel, once.

const NUMBER = { phone_number_id: "106540352242922", waba_id: "102290129340398", access_token: "EAAG-read-receipts-0001" }
const PHONE = "+14155550100"

interface MarkReadCall {
  readonly phone_number_id: string
  readonly wamid: string
  readonly typing: boolean
}

/** A WhatsApp-like transport recording its read receipts; `failures` are answered first, one per call. */
const makeTransport = () => {
  const calls: Array<MarkReadCall> = []
  const failures: Array<TransportFailed | "hang"> = []
  const service: MessageTransportService = {
    send: () => Effect.succeed({ provider_message_id: null, status: "sent" as const }),
    markRead: (channel, wamid, options) =>
      Effect.suspend(() => {
        calls.push({ phone_number_id: channel.phone_number_id, wamid, typing: options.typing })
        const failure = failures.shift()
        return failure === undefined ? Effect.void : failure === "hang" ? Effect.never : Effect.fail(failure)
      }),
    kind: "whatsapp"
  }
  return { calls, failures, service }
}

const acceptingVerifier = Layer.succeed(ChannelVerifier, { verify: () => Effect.succeed({ display_phone_number: "+1 555-078-3881" }) })

const run = <A, E>(service: MessageTransportService, body: Effect.Effect<A, E, any>) =>
  body.pipe(
    Effect.provide(
      Core.layerWithTransport(Layer.succeed(MessageTransport, service)).pipe(
        Layer.provideMerge(Layer.mergeAll(SecretKey.layer(generateSecretKey()), acceptingVerifier)),
        Layer.provideMerge(MemoryStorage.layer)
      )
    )
  ) as Effect.Effect<A, E>

/** An organization with a channel. */
const setUp = Effect.gen(function* () {
  const org = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" }))
  const channel = yield* Effect.flatMap(Channels, (channels) => channels.add(org.id, NUMBER))
  return { orgId: org.id, channelId: channel.uuid }
})

/** A customer's message, received now (then the clock moves a second on). */
const receive = (orgId: OrganizationId, wamid: string | undefined, channelId: string | null, text = "Hello") =>
  Effect.gen(function* () {
    const messaging = yield* Messaging
    const receipt = yield* messaging.receive(orgId, {
      phone: PHONE,
      type: "text",
      text,
      ...(wamid === undefined ? {} : { provider_message_id: wamid }),
      channel_uuid: channelId
    })
    yield* TestClock.adjust("1 second")
    return receipt
  })

const statusOf = (orgId: OrganizationId, id: string) =>
  Effect.map(
    Effect.flatMap(Storage, (storage) => storage.chats.findMessage(orgId, id as never)),
    (found) => Option.getOrThrow(found).status
  )

describe("Messaging.markChatRead", () => {
  it.effect("sends the receipt of the newest inbound message through its channel; it becomes read; a second call sends nothing", () => {
    const transport = makeTransport()
    return run(transport.service, Effect.gen(function* () {
      const { orgId, channelId } = yield* setUp
      const older = yield* receive(orgId, "wamid.older", channelId)
      const newest = yield* receive(orgId, "wamid.newest", channelId, "Are you there?")
      // A later outbound message is not what a read receipt names.
      yield* (yield* Messaging).sendText(orgId, { phone: PHONE, message: "Yes" })
      const chatId = newest.chat.uuid
      expect(newest.chat.unread_count).toBe(2)
      const messaging = yield* Messaging
      const read = yield* messaging.markChatRead(orgId, chatId)
      expect(read.unread_count).toBe(0)
      expect(read.unread).toBe(false)
      expect(read.read_receipt).toEqual({ status: "sent", message_uuid: newest.message.uuid, reason: null, failure: null })
      expect(transport.calls).toEqual([{ phone_number_id: NUMBER.phone_number_id, wamid: "wamid.newest", typing: false }])
      expect(yield* statusOf(orgId, newest.message.uuid)).toBe("read")
      expect(yield* statusOf(orgId, older.message.uuid)).toBe("delivered")
      const again = yield* messaging.markChatRead(orgId, chatId, { typing: true })
      expect(again.read_receipt).toEqual({ status: "skipped", message_uuid: newest.message.uuid, reason: "already_read", failure: null })
      expect(transport.calls.length).toBe(1)
      // A new message is read again, with the typing indicator when asked.
      const next = yield* receive(orgId, "wamid.next", channelId)
      expect((yield* messaging.markChatRead(orgId, chatId, { typing: true })).read_receipt.status).toBe("sent")
      expect(transport.calls[1]).toEqual({ phone_number_id: NUMBER.phone_number_id, wamid: "wamid.next", typing: true })
      expect(yield* statusOf(orgId, next.message.uuid)).toBe("read")
    }))
  })

  it.effect("a refusal: the local read is committed, the receipt failed, the message stays delivered and the next call tries again", () => {
    const transport = makeTransport()
    return run(transport.service, Effect.gen(function* () {
      const { orgId, channelId } = yield* setUp
      const inbound = yield* receive(orgId, "wamid.1", channelId)
      transport.failures.push(new TransportFailed({ reason: "(#131009) Parameter value is not valid", provider_code: "131009", http_status: 400 }))
      const messaging = yield* Messaging
      const read = yield* messaging.markChatRead(orgId, inbound.chat.uuid)
      expect(read.unread_count).toBe(0)
      expect(read.read_receipt).toEqual({
        status: "failed",
        message_uuid: inbound.message.uuid,
        reason: null,
        failure: { code: "131009", title: "(#131009) Parameter value is not valid" }
      })
      expect(transport.calls.length).toBe(1)
      expect((yield* (yield* Chats).get(orgId, inbound.chat.uuid)).unread_count).toBe(0)
      expect(yield* statusOf(orgId, inbound.message.uuid)).toBe("delivered")
      expect((yield* messaging.markChatRead(orgId, inbound.chat.uuid)).read_receipt.status).toBe("sent")
      expect(transport.calls.length).toBe(2)
    }))
  })

  it.effect("a transient failure is retried once: then sent; twice: failed", () => {
    const transport = makeTransport()
    return run(transport.service, Effect.gen(function* () {
      const { orgId, channelId } = yield* setUp
      const inbound = yield* receive(orgId, "wamid.1", channelId)
      const unavailable = () => new TransportFailed({ reason: "Service Unavailable", provider_code: null, http_status: 503 })
      transport.failures.push(unavailable())
      const messaging = yield* Messaging
      expect((yield* messaging.markChatRead(orgId, inbound.chat.uuid)).read_receipt.status).toBe("sent")
      expect(transport.calls.length).toBe(2)
      const second = yield* receive(orgId, "wamid.2", channelId)
      transport.failures.push(unavailable(), unavailable())
      const read = yield* messaging.markChatRead(orgId, second.chat.uuid)
      expect(read.read_receipt).toMatchObject({ status: "failed", failure: { code: "network_error", title: "Service Unavailable" } })
      expect(transport.calls.length).toBe(4)
      expect(yield* statusOf(orgId, second.message.uuid)).toBe("delivered")
    }))
  })

  it.effect("an attempt with no answer within the send timeout is retried once, then failed", () => {
    const transport = makeTransport()
    return run(transport.service, Effect.gen(function* () {
      const { orgId, channelId } = yield* setUp
      const inbound = yield* receive(orgId, "wamid.1", channelId)
      transport.failures.push("hang", "hang")
      const fiber = yield* Effect.fork((yield* Messaging).markChatRead(orgId, inbound.chat.uuid))
      yield* TestClock.adjust("3 seconds")
      yield* TestClock.adjust("3 seconds")
      const read = yield* fiber.await.pipe(Effect.flatten)
      expect(read.read_receipt).toMatchObject({ status: "failed", failure: { code: "network_error", title: "No answer within 2000 ms" } })
      expect(transport.calls.length).toBe(2)
    }).pipe(Effect.provide(SendQueueSettings.layer({ timeoutMs: 2_000 }))))
  })

  it.effect("skipped, with the local read committed: no inbound message, no provider id, no channel, a removed channel", () => {
    const transport = makeTransport()
    return run(transport.service, Effect.gen(function* () {
      const { orgId, channelId } = yield* setUp
      const messaging = yield* Messaging
      // Only an outbound message (an organization without a channel): nothing to read.
      const other = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Other" }))
      const sent = yield* messaging.sendText(other.id, { phone: "+14155550199", message: "Hi" })
      const onlyOutbound = yield* messaging.markChatRead(other.id, sent.chat_uuid)
      expect(onlyOutbound.read_receipt).toEqual({ status: "skipped", message_uuid: null, reason: "no_inbound_message", failure: null })
      // No provider id, then no channel: skipped, and the message is read.
      const withoutId = yield* receive(orgId, undefined, channelId)
      const noId = yield* messaging.markChatRead(orgId, withoutId.chat.uuid)
      expect(noId).toMatchObject({ unread_count: 0, read_receipt: { status: "skipped", message_uuid: withoutId.message.uuid, reason: "no_provider_id" } })
      expect(yield* statusOf(orgId, withoutId.message.uuid)).toBe("read")
      const withoutChannel = yield* receive(orgId, "wamid.no-channel", null)
      expect((yield* messaging.markChatRead(orgId, withoutChannel.chat.uuid)).read_receipt.reason).toBe("no_channel")
      // The channel removed since the message came in.
      const last = yield* receive(orgId, "wamid.removed", channelId)
      yield* Effect.flatMap(Channels, (channels) => channels.remove(orgId, channelId as ChannelId))
      const removed = yield* messaging.markChatRead(orgId, last.chat.uuid)
      expect(removed).toMatchObject({ unread_count: 0, read_receipt: { status: "skipped", reason: "channel_removed", failure: null } })
      expect(transport.calls).toEqual([])
    }))
  })

  it.effect("the recording transport, and a transport without markRead, send nothing: skipped transport_unsupported", () =>
    Effect.gen(function* () {
      for (const service of [recordingTransport, { send: recordingTransport.send, kind: "custom" as const }]) {
        yield* run(service, Effect.gen(function* () {
          const { orgId, channelId } = yield* setUp
          const inbound = yield* receive(orgId, "wamid.1", channelId)
          const read = yield* (yield* Messaging).markChatRead(orgId, inbound.chat.uuid)
          expect(read).toMatchObject({ unread_count: 0, read_receipt: { status: "skipped", reason: "transport_unsupported" } })
          expect(yield* statusOf(orgId, inbound.message.uuid)).toBe("read")
        }))
      }
    }))

  it.effect("typing not a boolean is InvalidInput naming it, nothing written; an unknown chat is RecordNotFound", () => {
    const transport = makeTransport()
    return run(transport.service, Effect.gen(function* () {
      const { orgId, channelId } = yield* setUp
      const inbound = yield* receive(orgId, "wamid.1", channelId)
      const messaging = yield* Messaging
      const invalid = yield* failureOf(messaging.markChatRead(orgId, inbound.chat.uuid, { typing: "yes" as never }))
      expect(invalid).toMatchObject({ _tag: "InvalidInput", issues: [{ field: "typing" }] })
      expect((yield* (yield* Chats).get(orgId, inbound.chat.uuid)).unread_count).toBe(1)
      const missing = yield* failureOf(messaging.markChatRead(orgId, "00000000-0000-4000-8000-000000000000" as ChatId))
      expect(missing._tag).toBe("RecordNotFound")
      expect(transport.calls).toEqual([])
    }))
  })
})

describe("WhatsAppCloudTransport.markRead against the simulator", () => {
  const CHANNEL = { uuid: "channel-1", phone_number_id: NUMBER.phone_number_id, access_token: NUMBER.access_token }
  let simulator: WhatsAppSimulator
  let receiver: Server
  beforeAll(async () => {
    simulator = await startSimulator({ numbers: [{ ...NUMBER, display_phone_number: "+1 555-078-3881" }] })
    // The simulator delivers customers' messages to a webhook: here one that accepts everything.
    receiver = createServer((_req, res) => res.writeHead(200).end("{}"))
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
    simulator.configure({ webhookUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhook` })
  })
  afterAll(async () => {
    await simulator.close()
    await new Promise<void>((resolve) => receiver.close(() => resolve()))
  })

  it.live("posts Meta's read call through the channel's number and token (layer and withChannels); Meta's refusals are TransportFailed in the classes of a send's", () =>
    Effect.gen(function* () {
      const { id: wamid } = yield* Effect.promise(() => simulator.postInbound({ from: "16505551234", profile_name: "Sheena", message: textMessage("Hi") }))
      const viaLayer = yield* Effect.provide(MessageTransport, WhatsAppCloudTransport.layer({ phoneNumberId: "1", accessToken: "unused", baseUrl: simulator.url }))
      const viaChannels = WhatsAppCloudTransport.withChannels({ baseUrl: simulator.url }, recordingTransport)
      yield* viaLayer.markRead!(CHANNEL, wamid, { typing: false })
      yield* viaChannels.markRead!(CHANNEL, wamid, { typing: true })
      expect(simulator.received({ route: "mark_read" }).map((entry) => [entry.authorization, entry.body])).toEqual([
        [`Bearer ${NUMBER.access_token}`, { messaging_product: "whatsapp", status: "read", message_id: wamid }],
        [`Bearer ${NUMBER.access_token}`, { messaging_product: "whatsapp", status: "read", message_id: wamid, typing_indicator: { type: "text" } }]
      ])
      const unknown = yield* Effect.flip(viaChannels.markRead!(CHANNEL, "wamid.never-delivered", { typing: false }))
      expect([unknown.provider_code, unknown.http_status, classifyFailure(unknown)]).toEqual(["131009", 400, "permanent"])
      simulator.script.enqueue([{ http_status: 503 }], "mark_read")
      const unavailable = yield* Effect.flip(viaChannels.markRead!(CHANNEL, wamid, { typing: false }))
      expect([unavailable.http_status, classifyFailure(unavailable)]).toEqual([503, "transient"])
      expect(simulator.sends()).toEqual([])
    }))
})
