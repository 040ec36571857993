import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Layer, Option, TestClock } from "effect"
import {
  Chats,
  Core,
  MemoryStorage,
  Messaging,
  MessageTransport,
  type OrganizationId,
  Organizations,
  type OutboundMessage,
  runLeasedPass,
  runSendDispatcher,
  sendQueue,
  Storage,
  Templates,
  type TemplateInput
} from "@switchboard/core"
import { failureOf } from "./failure.js"

// Scheduled sends (docs/messaging.md "Scheduled sends") on the memory store and the
// TestClock: `send_at` is read at the request (RFC 3339, at most 30 days ahead), the message
// is stored `scheduled` in its chat and leaves through the send queue at that time; a
// cancelled one never leaves; a template's approval is checked again when it leaves.

const PHONE = "+14155550100"
const DAY_MS = 86_400_000

/** A transport that records every message it is given. */
const makeTestTransport = () => {
  const sent: Array<{ readonly message: OutboundMessage; readonly at: number }> = []
  const layer = Layer.succeed(MessageTransport, {
    send: (message) =>
      Effect.map(Clock.currentTimeMillis, (at) => {
        sent.push({ message, at })
        return { provider_message_id: `wamid.${sent.length}`, status: "sent" as const }
      })
  })
  return { sent, layer }
}

const withTransport = <A, E>(
  body: (transport: ReturnType<typeof makeTestTransport>) => Effect.Effect<A, E, Layer.Layer.Success<typeof Core.layer> | Storage>
) =>
  Effect.suspend(() => {
    const transport = makeTestTransport()
    return body(transport).pipe(Effect.provide(Core.layerWithTransport(transport.layer).pipe(Layer.provideMerge(MemoryStorage.layer))))
  })

const orderUpdate: TemplateInput = {
  name: "order_update",
  language: "en_US",
  category: "UTILITY",
  status: "APPROVED",
  components: [{ type: "BODY", text: "Order {{1}} has shipped.", example: { body_text: [["#1234"]] } }]
}

const setUp = Effect.gen(function* () {
  const org = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" }))
  yield* Effect.flatMap(Templates, (templates) => templates.create(org.id, orderUpdate))
  return { orgId: org.id, messaging: yield* Messaging }
})

/** `ms` from the TestClock's now, as RFC 3339. */
const inMs = (ms: number) => Effect.map(Clock.currentTimeMillis, (now) => new Date(now + ms).toISOString())

const dispatchOnce = Effect.flatMap(Clock.currentTimeMillis, (now) => runLeasedPass(sendQueue, now, 60_000, 100))

const statusOf = (orgId: OrganizationId, id: string) =>
  Effect.map(
    Effect.flatMap(Storage, ({ chats }) => chats.findMessage(orgId, id as never)),
    (found) => Option.getOrThrow(found)
  )

describe("send_at", () => {
  it.effect("not RFC 3339, or more than 30 days ahead: InvalidInput naming send_at, nothing written; past: sent now", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp
        for (const sendAt of ["tomorrow", "2026-12-01 09:00", 17, yield* inMs(30 * DAY_MS + 1_000)]) {
          const error = yield* failureOf(messaging.sendText(orgId, { phone: PHONE, message: "Hi", send_at: sendAt as string }))
          expect(error).toMatchObject({ _tag: "InvalidInput", issues: [{ field: "send_at" }] })
        }
        const chats = yield* Effect.flatMap(Chats, (c) => c.list(orgId, { pagination: true, per_page: 10 }))
        expect(chats.chats).toEqual([])
        const atLimit = yield* messaging.sendText(orgId, { phone: PHONE, message: "Hi", send_at: yield* inMs(30 * DAY_MS) })
        expect(atLimit.status).toBe("scheduled")
        const past = yield* messaging.sendText(orgId, { phone: PHONE, message: "Now", send_at: yield* inMs(-60_000) })
        expect(past.status).toBe("sent")
        expect(transport.sent.map((each) => each.message.message_id)).toEqual([past.message_id])
      })
    ))

  it.effect("a text 3 s ahead: scheduled in its chat at once, next_attempt_at = send_at; leaves at send_at, not before", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp
        const sendAt = yield* inMs(3_000)
        const result = yield* messaging.sendText(orgId, { phone: PHONE, message: "Later", send_at: sendAt })
        expect(result).toMatchObject({ status: "scheduled", next_attempt_at: sendAt, provider_message_id: null, failure: null })
        const page = yield* Effect.flatMap(Chats, (chats) => chats.messages(orgId, result.chat_uuid, { page: 1, per_page: 10 }))
        expect(page.items.map((message) => [message.uuid, message.status])).toEqual([[result.message_id, "scheduled"]])
        yield* TestClock.adjust(2_999)
        yield* dispatchOnce
        expect(transport.sent).toEqual([])
        yield* TestClock.adjust(1)
        yield* dispatchOnce
        expect(transport.sent.map((each) => each.message.message_id)).toEqual([result.message_id])
        expect((yield* statusOf(orgId, result.message_id)).status).toBe("sent")
      })
    ))

  it.effect("the dispatcher sleeping on a long poll wakes at send_at (nextDueAt includes scheduled messages)", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp
        const start = yield* Clock.currentTimeMillis
        const result = yield* messaging.sendText(orgId, { phone: PHONE, message: "Later", send_at: yield* inMs(3_000) })
        const loop = yield* Effect.fork(runSendDispatcher({ pollIntervalMs: 600_000 }))
        yield* TestClock.adjust(2_000)
        expect(transport.sent).toEqual([])
        yield* TestClock.adjust(1_000)
        yield* Effect.yieldNow()
        expect(transport.sent.map((each) => [each.message.message_id, each.at - start])).toEqual([[result.message_id, 3_000]])
        yield* Fiber.interrupt(loop)
      })
    ))

  it.effect("a cancelled scheduled message never leaves", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp
        const result = yield* messaging.sendText(orgId, { phone: PHONE, message: "Later", send_at: yield* inMs(3_000) })
        const cancelled = yield* messaging.cancelMessage(orgId, result.message_id)
        expect(cancelled).toMatchObject({ status: "failed", failure: { code: "cancelled" } })
        yield* TestClock.adjust(10_000)
        yield* dispatchOnce
        expect(transport.sent).toEqual([])
        expect((yield* statusOf(orgId, result.message_id)).status).toBe("failed")
      })
    ))

  it.effect("a scheduled template is checked again when it leaves: no longer approved → failed template_not_approved, nothing sent", () =>
    withTransport((transport) =>
      Effect.gen(function* () {
        const { orgId, messaging } = yield* setUp
        const template = { name: "order_update", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "#1" }] }] }
        const kept = yield* messaging.sendTemplate(orgId, { phone: PHONE, template, send_at: yield* inMs(1_000) })
        const paused = yield* messaging.sendTemplate(orgId, { phone: "+14155550101", template, send_at: yield* inMs(2_000) })
        expect([kept.status, paused.status]).toEqual(["scheduled", "scheduled"])
        yield* TestClock.adjust(1_000)
        yield* dispatchOnce
        expect(transport.sent.map((each) => each.message.message_id)).toEqual([kept.message_id])
        const { templates } = yield* Storage
        const found = Option.getOrThrow(yield* templates.findByIdentity(orgId, "order_update", "en_US", null))
        yield* templates.updateStatus(orgId, found.uuid, { status: "PAUSED", rejected_reason: null, now: yield* inMs(0) })
        yield* TestClock.adjust(1_000)
        yield* dispatchOnce
        expect(transport.sent).toHaveLength(1)
        expect(yield* statusOf(orgId, paused.message_id)).toMatchObject({ status: "failed", failure: { code: "template_not_approved" }, attempts: 0 })
      })
    ))
})
