import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { type ChatId, Chats, Core, type InvalidInput, MemoryStorage, type Message, type MessageId, Organizations } from "@switchboard/core"

const TestLayer = Core.layer.pipe(Layer.provideMerge(MemoryStorage.layer))

const PHONE = "+14155550100"

/** A fresh organization and the Chats service. */
const setUp = Effect.gen(function* () {
  const org = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme", plan: {} }))
  return { orgId: org.id, chats: yield* Chats }
})

/** The `[field, code]` of each issue of an `InvalidInput`, else the error's tag. */
const issuesOf = (error: { readonly _tag: string }) =>
  error._tag === "InvalidInput" ? (error as InvalidInput).issues.map((issue) => [issue.field, issue.code]) : error._tag

describe("Chats.listMessages (keyset pages of a chat's messages)", () => {
  it.effect("pages newest first with next_cursor until has_more is false, no duplicate and no gap under equal created_at", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp
      const { chat } = yield* chats.receiveInbound(orgId, { phone: PHONE, type: "text", text: "m0" })
      // Seven messages at the same instant, then two later ones.
      for (let n = 1; n <= 7; n++) yield* chats.appendOutbound(orgId, chat.contact.uuid, { type: "text", text: `m${n}` })
      yield* TestClock.adjust("1 minute")
      for (let n = 8; n <= 9; n++) yield* chats.receiveInbound(orgId, { phone: PHONE, type: "text", text: `m${n}` })
      const seen: Array<Message> = []
      let cursor: string | undefined
      for (let guard = 0; guard < 20; guard++) {
        const page = yield* chats.listMessages(orgId, chat.uuid, { limit: 3, ...(cursor === undefined ? {} : { cursor }) })
        seen.push(...page.messages)
        expect(page.pagination.has_more).toBe(page.pagination.next_cursor !== null)
        expect([page.pagination.mode, page.pagination.limit]).toEqual(["cursor", 3])
        if (page.pagination.next_cursor === null) break
        cursor = page.pagination.next_cursor
      }
      expect(seen).toHaveLength(10)
      expect(new Set(seen.map((m) => m.uuid)).size).toBe(10)
      const sorted = [...seen].sort((a, b) =>
        a.created_at === b.created_at ? (a.uuid < b.uuid ? 1 : -1) : a.created_at < b.created_at ? 1 : -1
      )
      expect(seen).toEqual(sorted)
      const defaults = yield* chats.listMessages(orgId, chat.uuid, {})
      expect([defaults.messages.length, defaults.pagination]).toEqual([10, { mode: "cursor", limit: 20, next_cursor: null, has_more: false }])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a bad limit, a damaged cursor or one of another chat or organization → InvalidInput naming the parameter", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp
      const first = (yield* chats.receiveInbound(orgId, { phone: PHONE, type: "text", text: "a" })).chat
      yield* chats.receiveInbound(orgId, { phone: PHONE, type: "text", text: "b" })
      const second = (yield* chats.receiveInbound(orgId, { phone: "+14155550101", type: "text", text: "c" })).chat
      const cursor = (yield* chats.listMessages(orgId, first.uuid, { limit: 1 })).pagination.next_cursor!
      expect(cursor).toEqual(expect.any(String))
      const other = yield* setUp
      const theirs = (yield* other.chats.receiveInbound(other.orgId, { phone: PHONE, type: "text", text: "x" })).chat
      const fail = (id: ChatId, params: Parameters<typeof chats.listMessages>[2], organization = orgId) =>
        Effect.map(Effect.flip(chats.listMessages(organization, id, params)), issuesOf)
      expect(yield* fail(first.uuid, { limit: 0 })).toEqual([["limit", "out_of_range"]])
      expect(yield* fail(first.uuid, { limit: 101 })).toEqual([["limit", "out_of_range"]])
      expect(yield* fail(first.uuid, { limit: 1.5 })).toEqual([["limit", "invalid_type"]])
      expect(yield* fail(first.uuid, { cursor: "not-a-cursor" })).toEqual([["cursor", "invalid_cursor"]])
      expect(yield* fail(second.uuid, { cursor })).toEqual([["cursor", "invalid_cursor"]])
      expect(yield* fail(theirs.uuid, { cursor }, other.orgId)).toEqual([["cursor", "invalid_cursor"]])
      const chatList = (yield* chats.list(orgId, { limit: 1 })).pagination
      if (chatList.mode !== "cursor" || chatList.next_cursor === null) return expect.fail("expected a chat list cursor")
      expect(yield* fail(first.uuid, { cursor: chatList.next_cursor })).toEqual([["cursor", "invalid_cursor"]])
      expect((yield* chats.listMessages(orgId, first.uuid, { cursor, limit: 5 })).messages.map((m) => m.text)).toEqual(["a"])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("an unknown chat or another organization's → RecordNotFound", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp
      const other = yield* setUp
      const theirs = (yield* other.chats.receiveInbound(other.orgId, { phone: PHONE, type: "text", text: "x" })).chat
      for (const id of [theirs.uuid, "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a" as ChatId]) {
        expect(yield* Effect.flip(chats.listMessages(orgId, id, {}))).toMatchObject({ _tag: "RecordNotFound", missing: [{ resource: "chat", uuid: id }] })
      }
    }).pipe(Effect.provide(TestLayer)))
})

describe("Chats.getMessage (one message of the organization by uuid)", () => {
  it.effect("answers an inbound and an outbound message as listMessages shows them", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp
      const inbound = yield* chats.receiveInbound(orgId, { phone: PHONE, type: "text", text: "hi" })
      const outbound = yield* chats.appendOutbound(orgId, inbound.chat.contact.uuid, { type: "text", text: "hello" })
      const listed = (yield* chats.listMessages(orgId, inbound.chat.uuid, {})).messages
      expect(yield* chats.getMessage(orgId, inbound.message.uuid)).toEqual(listed.find((m) => m.uuid === inbound.message.uuid))
      expect(yield* chats.getMessage(orgId, outbound.message.uuid)).toEqual(listed.find((m) => m.uuid === outbound.message.uuid))
      expect((yield* chats.getMessage(orgId, outbound.message.uuid)).direction).toBe("outbound")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("an unknown uuid or another organization's message → RecordNotFound (resource message)", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp
      const other = yield* setUp
      const theirs = (yield* other.chats.receiveInbound(other.orgId, { phone: PHONE, type: "text", text: "x" })).message
      for (const id of [theirs.uuid, "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a" as MessageId]) {
        expect(yield* Effect.flip(chats.getMessage(orgId, id))).toMatchObject({ _tag: "RecordNotFound", missing: [{ resource: "message", uuid: id }] })
      }
    }).pipe(Effect.provide(TestLayer)))
})

describe("Chats.updateMessageStatus with a failure", () => {
  it.effect("records the failure with failed; refuses it with another status or without a code; cuts a long title", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp
      const { chat } = yield* chats.receiveInbound(orgId, { phone: PHONE, type: "text", text: "hi" })
      const { message } = yield* chats.appendOutbound(orgId, chat.contact.uuid, { type: "text", text: "x" })
      const failure = { code: "131047", title: "Re-engagement message" }
      expect(issuesOf(yield* Effect.flip(chats.updateMessageStatus(orgId, message.uuid, "sent", undefined, failure)))).toEqual([["failure", "invalid_format"]])
      expect(issuesOf(yield* Effect.flip(chats.updateMessageStatus(orgId, message.uuid, "failed", undefined, { code: " ", title: "t" })))).toEqual([["failure.code", "required"]])
      expect(issuesOf(yield* Effect.flip(chats.updateMessageStatus(orgId, message.uuid, "failed", undefined, { code: "1", title: "" })))).toEqual([["failure.title", "required"]])
      const failed = yield* chats.updateMessageStatus(orgId, message.uuid, "failed", undefined, failure)
      expect([failed.status, failed.failure]).toEqual(["failed", failure])
      const long = (yield* chats.appendOutbound(orgId, chat.contact.uuid, { type: "text", text: "y" })).message
      const cut = yield* chats.updateMessageStatus(orgId, long.uuid, "failed", undefined, { code: "1", title: "x".repeat(5000) })
      expect(cut.failure?.title).toHaveLength(1024)
    }).pipe(Effect.provide(TestLayer)))
})
