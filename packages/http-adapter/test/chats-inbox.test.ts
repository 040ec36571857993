import { afterAll, describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { MessageTransport, Storage, type StorageService, TransportFailed } from "@switchboard/core"
import type { SwitchboardHandler } from "@switchboard/http-adapter"
import { at, receive, withChats } from "./chats-helpers.js"
import { makeHandler, makeSharedStorage, makeTenant, phone, UNKNOWN_UUID, type ApiClient } from "./helpers.js"

// The inbox routes (docs/chats.md "Inbox routes"): read a chat, page through its messages,
// set status / assignee / favorite, mark read; every rule on memory and on SQLite.

const storage = makeSharedStorage()
const handler = makeHandler(storage)
const handlers: Array<SwitchboardHandler> = [handler]
afterAll(() => Promise.all(handlers.map((each) => each.dispose())))

const tenant = () => makeTenant(storage, handler)

const MESSAGE_FIELDS = [
  "attempts",
  "broadcast_uuid",
  "channel_uuid",
  "chat_uuid",
  "contact_uuid",
  "content",
  "created_at",
  "direction",
  "failure",
  "media",
  "next_attempt_at",
  "provider_message_id",
  "reactions",
  "reply_to",
  "status",
  "template",
  "text",
  "transport",
  "type",
  "updated_at",
  "uuid"
]

/** `[field, code]` of every error item. */
const errorsOf = (result: { errors: ReadonlyArray<{ code: string; field?: string }> }) =>
  result.errors.map((error) => [error.field, error.code])

/** A tenant with one chat (an inbound message from `phone(1)` at minute 1). */
const tenantWithChat = async () => {
  const made = await tenant()
  const chat = await receive(storage, made.organization.id, phone(1), 1)
  return { ...made, chat }
}

/** Every message uuid of a chat, walked with `limit`, and the pages' sizes. */
const walkMessages = async (api: ApiClient, chatUuid: string, limit: number) => {
  const uuids: Array<string> = []
  const sizes: Array<number> = []
  let cursor: string | null = null
  for (let guard = 0; guard < 100; guard++) {
    const query = new URLSearchParams({ limit: String(limit), ...(cursor === null ? {} : { cursor }) })
    const result = await api.get(`/chats/${chatUuid}/messages?${query}`)
    expect(result.status, JSON.stringify(result.errors)).toBe(200)
    const { messages, pagination } = result.data as { messages: Array<{ uuid: string }>; pagination: Record<string, unknown> }
    uuids.push(...messages.map((message) => message.uuid))
    sizes.push(messages.length)
    expect([pagination.mode, pagination.limit, pagination.has_more]).toEqual(["cursor", limit, pagination.next_cursor !== null])
    cursor = pagination.next_cursor as string | null
    if (cursor === null) break
  }
  return { uuids, sizes }
}

describe("GET /chats/{uuid}", () => {
  it("answers the chat exactly as GET /chats lists it", async () => {
    const { api, chat } = await tenantWithChat()
    const listed = (await api.get("/chats")).data.chats[0]
    const result = await api.get(`/chats/${chat.uuid}`)
    expect([result.status, result.message]).toEqual([200, "Chat retrieved"])
    expect(result.data).toEqual(listed)
    expect((await api.get(`/chats/${chat.uuid.toUpperCase()}`)).data).toEqual(listed)
  })

  it("unknown or another organization's chat → 404 not_found; a malformed uuid → 400", async () => {
    const { chat } = await tenantWithChat()
    const { api } = await tenant()
    for (const uuid of [chat.uuid, UNKNOWN_UUID]) {
      const result = await api.get(`/chats/${uuid}`)
      expect([result.status, errorsOf(result)]).toEqual([404, [[undefined, "not_found"]]])
    }
    const malformed = await api.get("/chats/not-a-uuid")
    expect([malformed.status, errorsOf(malformed)[0]?.[0]]).toEqual([400, "uuid"])
  })
})

describe("GET /chats/{uuid}/messages", () => {
  it("answers the messages newest first with every field, in cursor pages of limit (default 20)", async () => {
    const { api, organization, chat } = await tenantWithChat()
    await withChats(storage, 2, (chats) => chats.appendOutbound(organization.id, chat.contact.uuid, { type: "text", text: "reply" }))
    await receive(storage, organization.id, phone(1), 3, { text: "thanks" })
    const result = await api.get(`/chats/${chat.uuid}/messages`)
    expect([result.status, result.message]).toEqual([200, "Messages retrieved"])
    const { messages, pagination } = result.data
    expect(pagination).toEqual({ mode: "cursor", limit: 20, next_cursor: null, has_more: false })
    expect(messages.map((message: { text: string }) => message.text)).toEqual(["thanks", "reply", "hello"])
    for (const message of messages) expect(Object.keys(message).sort()).toEqual(MESSAGE_FIELDS)
    expect(messages[1]).toMatchObject({
      chat_uuid: chat.uuid,
      contact_uuid: chat.contact.uuid,
      channel_uuid: null,
      // Appended by Chats.appendOutbound without a transport: never handed to one.
      transport: null,
      direction: "outbound",
      type: "text",
      template: null,
      media: null,
      content: null,
      status: "queued",
      provider_message_id: null,
      failure: null,
      created_at: at(2),
      updated_at: at(2)
    })
  })

  it("pages through every message once, in order, under equal created_at", async () => {
    const { api, organization, chat } = await tenantWithChat()
    await withChats(storage, 5, (chats) =>
      Effect.forEach(Array.from({ length: 24 }, (_, n) => n), (n) =>
        chats.appendOutbound(organization.id, chat.contact.uuid, { type: "text", text: `same time ${n}` })
      )
    )
    await receive(storage, organization.id, phone(1), 9)
    const all = (await api.get(`/chats/${chat.uuid}/messages?limit=100`)).data.messages as Array<{ uuid: string; created_at: string }>
    expect(all).toHaveLength(26)
    expect(all.map((message) => message.created_at)).toEqual([at(9), ...Array(24).fill(at(5)), at(1)])
    for (const limit of [1, 5, 7, 25]) {
      const { uuids, sizes } = await walkMessages(api, chat.uuid, limit)
      expect(uuids).toEqual(all.map((message) => message.uuid))
      expect(sizes.slice(0, -1).every((size) => size === limit)).toBe(true)
    }
  })

  it("a bad limit or cursor → 400 naming it (invalid_cursor for another chat's cursor); another organization's chat → 404", async () => {
    const { api, organization, chat } = await tenantWithChat()
    await receive(storage, organization.id, phone(1), 2)
    const otherChat = await receive(storage, organization.id, phone(2), 3)
    const cursor = (await api.get(`/chats/${chat.uuid}/messages?limit=1`)).data.pagination.next_cursor as string
    for (const [query, field, code] of [
      ["limit=0", "limit", "out_of_range"],
      ["limit=101", "limit", "out_of_range"],
      ["limit=abc", "limit", "invalid_type"],
      ["limit=2.5", "limit", "invalid_type"],
      ["cursor=garbage", "cursor", "invalid_cursor"],
      ["cursor=", "cursor", "invalid_cursor"]
    ] as const) {
      const result = await api.get(`/chats/${chat.uuid}/messages?${query}`)
      expect([query, result.status, errorsOf(result)]).toEqual([query, 400, [[field, code]]])
    }
    const foreign = await api.get(`/chats/${otherChat.uuid}/messages?cursor=${cursor}`)
    expect([foreign.status, errorsOf(foreign)]).toEqual([400, [["cursor", "invalid_cursor"]]])
    const next = await api.get(`/chats/${chat.uuid}/messages?cursor=${cursor}`)
    expect(next.data.messages.map((message: { created_at: string }) => message.created_at)).toEqual([at(1)])
    const stranger = await tenant()
    for (const uuid of [chat.uuid, UNKNOWN_UUID]) {
      expect((await stranger.api.get(`/chats/${uuid}/messages`)).status).toBe(404)
    }
    expect((await api.get("/chats/nope/messages")).status).toBe(400)
  })

  it("a refused send's message carries failure {code, title}; a network error has code network_error", async () => {
    let refusal = new TransportFailed({ reason: "Message failed to send because more than 24 hours have passed", provider_code: "131047" })
    const refusing = makeHandler(storage, {
      transport: Layer.succeed(MessageTransport, { send: () => Effect.fail(refusal) })
    })
    handlers.push(refusing)
    const { api } = await makeTenant(storage, refusing)
    const sent = await api.post("/send", { phone: phone(7), message: "Hello" })
    expect([sent.status, sent.data.status]).toEqual([200, "failed"])
    refusal = new TransportFailed({ reason: "fetch failed", provider_code: null })
    await api.post("/send", { phone: phone(7), message: "Again" })
    const messages = (await api.get(`/chats/${sent.data.chat_uuid}/messages`)).data.messages
    expect(messages.map((message: Record<string, unknown>) => [message.text, message.status, message.failure])).toEqual([
      ["Again", "failed", { code: "network_error", title: "fetch failed" }],
      ["Hello", "failed", { code: "131047", title: "Message failed to send because more than 24 hours have passed" }]
    ])
    const delivered = await (await tenant()).api.post("/send", { phone: phone(7), message: "Hi" })
    expect(delivered.data.status).toBe("sent")
  })
})

describe("PUT /chats/{uuid}", () => {
  it("sets status, assigned_to and favorite and answers the chat; null unassigns", async () => {
    const { api, chat } = await tenantWithChat()
    const result = await api.put(`/chats/${chat.uuid}`, { status: "pending", assigned_to: " agent-7 ", favorite: true })
    expect([result.status, result.message]).toEqual([200, "Chat updated"])
    expect(result.data).toMatchObject({ uuid: chat.uuid, status: "pending", assigned_to: "agent-7", favorite: true })
    expect((await api.get(`/chats/${chat.uuid}`)).data).toEqual(result.data)
    const unassigned = await api.put(`/chats/${chat.uuid}`, { assigned_to: null })
    expect([unassigned.data.assigned_to, unassigned.data.status, unassigned.data.favorite]).toEqual([null, "pending", true])
  })

  it("a field set to its current value changes nothing (200, same record); unknown fields are dropped", async () => {
    const { api, chat } = await tenantWithChat()
    const first = await api.put(`/chats/${chat.uuid}`, { status: "resolved", assigned_to: "a", favorite: false })
    const same = await api.put(`/chats/${chat.uuid}`, { status: "resolved", assigned_to: "a", favorite: false })
    expect([same.status, same.data]).toEqual([200, first.data])
    const open = await api.put(`/chats/${chat.uuid}`, { status: "open" })
    expect((await api.put(`/chats/${chat.uuid}`, { status: "open" })).data).toEqual(open.data)
    const dropped = await api.put(`/chats/${chat.uuid}`, { favorite: true, unread_count: 0, uuid: UNKNOWN_UUID })
    expect([dropped.status, dropped.data.uuid, dropped.data.unread_count, dropped.data.favorite]).toEqual([200, chat.uuid, 1, true])
  })

  it("status, assigned_to and favorite are one store write (chats.update called once, with all three)", async () => {
    const base = Effect.runSync(Effect.provide(Storage, storage))
    const patches: Array<unknown> = []
    const counting = Layer.succeed(Storage, {
      ...base,
      chats: { ...base.chats, update: (organizationId, id, patch, now) => (patches.push(patch), base.chats.update(organizationId, id, patch, now)) }
    } satisfies StorageService)
    const counted = makeHandler(counting)
    handlers.push(counted)
    const made = await makeTenant(counting, counted)
    const chat = await receive(counting, made.organization.id, phone(1), 1)
    const result = await made.api.put(`/chats/${chat.uuid}`, { status: "pending", assigned_to: "agent-7", favorite: true })
    expect(result.data).toMatchObject({ status: "pending", assigned_to: "agent-7", favorite: true })
    expect(patches).toEqual([{ status: "pending", assigned_to: "agent-7", favorite: true }])
  })

  it("an empty body or bad values → 400 naming the field, nothing changed", async () => {
    const { api, chat } = await tenantWithChat()
    const cases: ReadonlyArray<readonly [unknown, string | undefined]> = [
      [{}, undefined],
      [{ unknown: 1 }, undefined],
      [{ status: "archived" }, "status"],
      [{ status: null }, "status"],
      [{ assigned_to: "" }, "assigned_to"],
      [{ assigned_to: "x".repeat(256) }, "assigned_to"],
      [{ assigned_to: 7 }, "assigned_to"],
      [{ favorite: "yes" }, "favorite"],
      [{ favorite: null }, "favorite"],
      [{ assigned_to: "unassigned", status: "closed", favorite: true }, "assigned_to"],
      [{ assigned_to: "   ", status: "closed" }, "assigned_to"]
    ]
    for (const [body, field] of cases) {
      const result = await api.put(`/chats/${chat.uuid}`, body)
      expect([JSON.stringify(body), result.status, result.errors[0]?.field]).toEqual([JSON.stringify(body), 400, field])
    }
    expect((await api.get(`/chats/${chat.uuid}`)).data).toEqual((await api.get("/chats")).data.chats[0])
    expect((await api.get(`/chats/${chat.uuid}`)).data).toMatchObject({ status: "open", assigned_to: null, favorite: false, updated_at: chat.updated_at })
    expect((await api.put("/chats/nope", { favorite: true })).status).toBe(400)
  })
})

describe("POST /chats/{uuid}/read", () => {
  it("sets unread_count 0 and unread false, returns the chat; idempotent", async () => {
    const { api, organization, chat } = await tenantWithChat()
    await receive(storage, organization.id, phone(1), 2)
    expect((await api.get(`/chats/${chat.uuid}`)).data).toMatchObject({ unread: true, unread_count: 2 })
    const read = await api.post(`/chats/${chat.uuid}/read`, undefined)
    expect([read.status, read.message]).toEqual([200, "Chat marked read"])
    expect(read.data).toMatchObject({ uuid: chat.uuid, unread: false, unread_count: 0, read_receipt: { status: "skipped", reason: "no_provider_id" } })
    const { read_receipt: _first, ...readChat } = read.data
    expect((await api.get(`/chats/${chat.uuid}`)).data).toEqual(readChat)
    const { read_receipt: second, ...again } = (await api.post(`/chats/${chat.uuid}/read`, undefined)).data
    expect(again).toEqual(readChat)
    expect(second).toMatchObject({ status: "skipped", reason: "already_read" })
  })
})

describe("the inbox routes never reach another organization's chat", () => {
  it("GET, messages, PUT, read and GET /messages/{uuid} answer 404 not_found and change nothing", async () => {
    const owner = await tenantWithChat()
    const { api } = await tenant()
    const before = (await owner.api.get(`/chats/${owner.chat.uuid}`)).data
    const results = [
      await api.get(`/chats/${owner.chat.uuid}`),
      await api.get(`/chats/${owner.chat.uuid}/messages`),
      await api.put(`/chats/${owner.chat.uuid}`, { status: "closed", assigned_to: "me", favorite: true }),
      await api.post(`/chats/${owner.chat.uuid}/read`, undefined),
      await api.get(`/messages/${owner.chat.last_message?.uuid}`)
    ]
    expect(results.map((result) => [result.status, errorsOf(result)])).toEqual(Array(5).fill([404, [[undefined, "not_found"]]]))
    expect((await owner.api.get(`/chats/${owner.chat.uuid}`)).data).toEqual(before)
  })
})

describe("the inbox routes count in the general rate-limit bucket", () => {
  it("the fourth inbox call of a window of three → 429 rate_limited", async () => {
    const limited = makeHandler(storage, { rateLimit: { send: { max: 100, windowMs: 60_000 }, general: { max: 3, windowMs: 60_000 } } })
    handlers.push(limited)
    const { api, organization } = await makeTenant(storage, limited)
    const chat = await receive(storage, organization.id, phone(1), 1)
    // The four calls must fall in one fixed window of 60 s: start them with 10 s of it left.
    while (60_000 - (Date.now() % 60_000) < 10_000) await new Promise((resolve) => setTimeout(resolve, 100))
    const statuses = [
      (await api.get(`/chats/${chat.uuid}`)).status,
      (await api.get(`/chats/${chat.uuid}/messages`)).status,
      (await api.put(`/chats/${chat.uuid}`, { favorite: true })).status
    ]
    const refused = await api.post(`/chats/${chat.uuid}/read`, undefined)
    expect([...statuses, refused.status, refused.errors[0]?.code]).toEqual([200, 200, 200, 429, "rate_limited"])
    // The wait for the window above may take up to 10 s.
  }, 30_000)
})
