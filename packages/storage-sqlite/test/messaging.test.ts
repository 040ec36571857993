import { afterAll, describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Layer } from "effect"
import {
  BasicReplies,
  type ChatId,
  Chats,
  Core,
  Messaging,
  MessageTransport,
  type MessageFailure,
  type OrganizationId,
  Organizations,
  Storage,
  Templates,
  TransportFailed,
  runLeasedPass,
  sendQueue
} from "@switchboard/core"
import Sqlite from "better-sqlite3"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { countWriteTransactions, tempFiles } from "./helpers.js"

// The Messaging service on SQLite (the core suite runs on the memory store): the contact
// upsert with its atomic plan check, the message records and the auto-reply.

const files = tempFiles()
afterAll(files.cleanup)

/** A transport that refuses messages to +14155550199 and accepts the others. */
const transport = Layer.succeed(MessageTransport, {
  send: (message) =>
    message.to === "+14155550199"
      ? Effect.fail(new TransportFailed({ reason: "not allowed", provider_code: "131030" }))
      : Effect.succeed({ provider_message_id: `wamid.${message.message_id}`, status: "sent" as const })
})

const live = () =>
  Core.layerWithTransport(transport).pipe(Layer.provideMerge(SqliteStorage.layer({ filename: files.file() })), Layer.orDie)

const setUp = (contacts_limit: number | null) =>
  Effect.gen(function* () {
    const org = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme", plan: { contacts_limit } }))
    yield* Effect.flatMap(Templates, (templates) =>
      templates.create(org.id, {
        name: "order_update",
        language: "en_US",
        category: "UTILITY",
        status: "APPROVED",
        components: [{ type: "BODY", text: "Order {{1}} has shipped." }]
      })
    )
    return { orgId: org.id, messaging: yield* Messaging }
  })

const messagesOf = (orgId: OrganizationId, chatId: ChatId) =>
  Effect.map(
    Effect.flatMap(Chats, (chats) => chats.messages(orgId, chatId, { page: 1, per_page: 100 })),
    (page) => page.items
  )

describe("Messaging on SQLite", () => {
  it.effect("a provider status report writes one page to the WAL: the message's row, not its provider-id index entry again", () =>
    Effect.gen(function* () {
      const db = new Sqlite(files.file())
      db.pragma("journal_mode = WAL")
      // No checkpoint moves frames out of the WAL while the test counts them.
      db.pragma("wal_autocheckpoint = 0")
      const layer = Core.layerWithTransport(transport).pipe(Layer.provideMerge(SqliteStorage.layerFromClient(db)), Layer.orDie)
      yield* Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp(null)
        const sent = yield* messaging.sendText(orgId, { phone: "+14155550100", message: "Hi" })
        const walFrames = () => (db.pragma("wal_checkpoint(PASSIVE)") as Array<{ log: number }>)[0]!.log
        db.pragma("wal_checkpoint(TRUNCATE)")
        expect(walFrames()).toBe(0)
        const chats = yield* Chats
        const outcome = yield* chats.applyProviderStatus(orgId, `wamid.${sent.message_id}`, "delivered")
        expect(outcome).toMatchObject({ _tag: "Updated", changed: true, message: { status: "delivered" } })
        expect(walFrames()).toBe(1)
      }).pipe(Effect.provide(layer))
      db.close()
    }))


  // The reports asked for in one event-loop turn share one write transaction
  // (repositories/chats.ts); when it fails, each is written again alone.
  it.effect("provider status reports of one turn share one transaction; one that cannot be written fails alone, nothing of it written", () =>
    Effect.gen(function* () {
      const db = new Sqlite(files.file())
      const transactions = countWriteTransactions(db)
      const layer = Core.layerWithTransport(transport).pipe(Layer.provideMerge(SqliteStorage.layerFromClient(db)), Layer.orDie)
      yield* Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp(null)
        const sent = yield* Effect.forEach(["+14155550100", "+14155550101", "+14155550102"], (phone) =>
          messaging.sendText(orgId, { phone, message: "Hi" })
        )
        const storage = yield* Storage
        const now = new Date().toISOString()
        const report = (index: number, failure?: MessageFailure) =>
          Effect.either(
            storage.chats.updateMessageStatusByProviderId(orgId, `wamid.${sent[index]!.message_id}`, {
              status: failure === undefined ? "delivered" : "failed",
              from: ["sent"],
              ...(failure === undefined ? {} : { failure }),
              now,
              pendingUntil: now
            })
          )
        transactions.reset()
        const together = yield* Effect.all([report(0), report(1)], { concurrency: "unbounded" })
        expect(together.map((result) => result._tag)).toEqual(["Right", "Right"])
        expect(transactions.count()).toBe(1)
        // A failure JSON.stringify cannot write (a BigInt) throws inside the group's transaction.
        const unwritable = { code: 1n, title: "unwritable" } as unknown as MessageFailure
        const mixed = yield* Effect.all([report(2, unwritable), report(0), report(1)], { concurrency: "unbounded" })
        expect(mixed.map((result) => result._tag)).toEqual(["Left", "Right", "Right"])
        expect(mixed[0]).toMatchObject({ left: { _tag: "StorageError", operation: "chats.updateMessageStatusByProviderId" } })
        const statuses = (yield* Effect.forEach(sent, (message) => messagesOf(orgId, message.chat_uuid))).map((messages) => messages[0]!.status)
        expect(statuses).toEqual(["delivered", "delivered", "sent"])
      }).pipe(Effect.provide(layer))
      db.close()
    }))

  it.effect("sends a template, upserting the contact; a refused message is kept failed", () =>
    Effect.gen(function* () {
      const { orgId, messaging } = yield* setUp(null)
      const template = { name: "order_update", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "#42" }] }] }
      const sent = yield* messaging.sendTemplate(orgId, { phone: "+14155550100", template, first_name: "Ada" })
      expect((yield* messagesOf(orgId, sent.chat_uuid))[0]).toMatchObject({
        uuid: sent.message_id,
        direction: "outbound",
        type: "template",
        text: "Order #42 has shipped.",
        template,
        status: "sent",
        provider_message_id: `wamid.${sent.message_id}`
      })
      const failed = yield* messaging.sendText(orgId, { phone: "+14155550199", message: "Hi" })
      expect(failed.status).toBe("failed")
      expect((yield* messagesOf(orgId, failed.chat_uuid))[0]).toMatchObject({ uuid: failed.message_id, status: "failed", provider_message_id: null })
    }).pipe(Effect.provide(live())))

  it.effect("contacts_limit: a new contact over the limit is refused with nothing written, an existing one is sent to", () =>
    Effect.gen(function* () {
      const { orgId, messaging } = yield* setUp(1)
      const first = yield* messaging.sendText(orgId, { phone: "+14155550100", message: "Hi" })
      const refused = yield* Effect.flip(messaging.sendText(orgId, { phone: "+14155550101", message: "Hi" }))
      expect(refused).toMatchObject({ _tag: "PlanLimitExceeded", limit: 1, usage: 1, requested: 1 })
      const again = yield* messaging.sendText(orgId, { phone: "+14155550100", message: "Again" })
      expect([again.contact_uuid, again.chat_uuid]).toEqual([first.contact_uuid, first.chat_uuid])
      const list = yield* Effect.flatMap(Chats, (chats) => chats.list(orgId, {}))
      expect(list.chats).toHaveLength(1)
    }).pipe(Effect.provide(live())))

  it.effect("answers an inbound trigger through the transport", () =>
    Effect.gen(function* () {
      const { orgId, messaging } = yield* setUp(0)
      yield* Effect.flatMap(BasicReplies, (replies) => replies.create(orgId, { name: "Hours", trigger: "hours", response: "9–17" }))
      const result = yield* messaging.receive(orgId, { phone: "+14155550100", type: "text", text: " HOURS " })
      // Queued in the inbound's step; the send queue's dispatcher sends it.
      expect(result.auto_reply?.status).toBe("queued")
      yield* Effect.flatMap(Clock.currentTimeMillis, (now) => runLeasedPass(sendQueue, now, 60_000, 10))
      expect((yield* messagesOf(orgId, result.chat.uuid)).find((message) => message.direction === "outbound")?.status).toBe("sent")
      const texts = (yield* messagesOf(orgId, result.chat.uuid)).map((message) => [message.direction, message.text])
      expect(texts.sort()).toEqual([["inbound", " HOURS "], ["outbound", "9–17"]])
    }).pipe(Effect.provide(live())))
})
