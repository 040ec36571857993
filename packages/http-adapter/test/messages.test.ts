import { afterAll, describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { MessageTransport, TransportFailed } from "@switchboard/core"
import type { SwitchboardHandler } from "@switchboard/http-adapter"
import { receive } from "./chats-helpers.js"
import { makeHandler, makeSharedStorage, makeTenant, phone, request, UNKNOWN_UUID, type ApiClient } from "./helpers.js"

// `GET /messages/{uuid}` (docs/chats.md "Inbox routes"): one message of the organization,
// inbound or outbound, as the chat's message list shows it; on memory and on SQLite.

const storage = makeSharedStorage()
const handler = makeHandler(storage)
const handlers: Array<SwitchboardHandler> = [handler]
afterAll(() => Promise.all(handlers.map((each) => each.dispose())))

const tenant = () => makeTenant(storage, handler)

/** `[field, code]` of every error item. */
const errorsOf = (result: { errors: ReadonlyArray<{ code: string; field?: string }> }) =>
  result.errors.map((error) => [error.field, error.code])

/** The message with `uuid` as `GET /chats/{chatUuid}/messages` lists it. */
const listedMessage = async (api: ApiClient, chatUuid: string, uuid: string) => {
  const result = await api.get(`/chats/${chatUuid}/messages?limit=100`)
  expect(result.status).toBe(200)
  const found = (result.data.messages as Array<{ uuid: string }>).find((message) => message.uuid === uuid)
  expect(found, `message ${uuid} in chat ${chatUuid}`).toBeDefined()
  return found
}

/** Answers `GET /messages/{uuid}` after checking it is a 200 "Message retrieved". */
const readMessage = async (api: ApiClient, uuid: string) => {
  const result = await api.get(`/messages/${uuid}`)
  expect([result.status, result.message], JSON.stringify(result.errors)).toEqual([200, "Message retrieved"])
  return result.data as Record<string, unknown>
}

describe("GET /messages/{uuid}", () => {
  it("answers an outbound send's message exactly as the chat's message list shows it", async () => {
    const { api } = await tenant()
    const sent = await api.post("/send", { phone: phone(1), message: "Hello" })
    expect([sent.status, sent.data.status]).toEqual([200, "sent"])
    const message = await readMessage(api, sent.data.message_id)
    expect(message).toEqual(await listedMessage(api, sent.data.chat_uuid, sent.data.message_id))
    expect(message).toMatchObject({
      uuid: sent.data.message_id,
      chat_uuid: sent.data.chat_uuid,
      contact_uuid: sent.data.contact_uuid,
      direction: "outbound",
      type: "text",
      text: "Hello",
      status: "sent",
      failure: null
    })
    // Case-insensitive like every other {uuid} route.
    expect(await readMessage(api, sent.data.message_id.toUpperCase())).toEqual(message)
  })

  it("answers an inbound message exactly as the chat's message list shows it", async () => {
    const { api, organization } = await tenant()
    const chat = await receive(storage, organization.id, phone(2), 1, { text: "Hi there", provider_message_id: "wamid.inbound-1" })
    const uuid = chat.last_message?.uuid as string
    const message = await readMessage(api, uuid)
    expect(message).toEqual(await listedMessage(api, chat.uuid, uuid))
    expect(message).toMatchObject({
      uuid,
      chat_uuid: chat.uuid,
      contact_uuid: chat.contact.uuid,
      direction: "inbound",
      type: "text",
      text: "Hi there",
      status: "delivered",
      provider_message_id: "wamid.inbound-1"
    })
  })

  it("answers a refused send's message with its failure {code, title}", async () => {
    const refusing = makeHandler(storage, {
      transport: Layer.succeed(MessageTransport, {
        send: () => Effect.fail(new TransportFailed({ reason: "Re-engagement message", provider_code: "131047" }))
      })
    })
    handlers.push(refusing)
    const { api } = await makeTenant(storage, refusing)
    const sent = await api.post("/send", { phone: phone(3), message: "Hello" })
    expect([sent.status, sent.data.status]).toEqual([200, "failed"])
    const message = await readMessage(api, sent.data.message_id)
    expect(message).toEqual(await listedMessage(api, sent.data.chat_uuid, sent.data.message_id))
    expect([message.status, message.failure]).toEqual(["failed", { code: "131047", title: "Re-engagement message" }])
  })

  it("another organization's message or an unknown uuid → 404 not_found; a malformed uuid → 400 naming uuid", async () => {
    const owner = await tenant()
    const sent = await owner.api.post("/send", { phone: phone(4), message: "Private" })
    const inbound = await receive(storage, owner.organization.id, phone(5), 1)
    const { api } = await tenant()
    for (const uuid of [sent.data.message_id, inbound.last_message?.uuid, UNKNOWN_UUID]) {
      const result = await api.get(`/messages/${uuid}`)
      expect([result.status, result.data, errorsOf(result)]).toEqual([404, null, [[undefined, "not_found"]]])
    }
    for (const malformed of ["not-a-uuid", "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6"]) {
      const result = await api.get(`/messages/${malformed}`)
      expect([result.status, errorsOf(result)[0]?.[0]]).toEqual([400, "uuid"])
    }
    // The owner still reads it.
    expect((await readMessage(owner.api, sent.data.message_id)).text).toBe("Private")
  })

  it("needs an API key, and counts in the general rate-limit bucket", async () => {
    const limited = makeHandler(storage, { rateLimit: { send: { max: 100, windowMs: 60_000 }, general: { max: 2, windowMs: 60_000 } } })
    handlers.push(limited)
    const { api } = await makeTenant(storage, limited)
    const sent = await api.post("/send", { phone: phone(6), message: "Hello" })
    expect(sent.status).toBe(200)
    const statuses = [(await api.get(`/messages/${sent.data.message_id}`)).status, (await api.get(`/messages/${sent.data.message_id}`)).status]
    const refused = await api.get(`/messages/${sent.data.message_id}`)
    expect([...statuses, refused.status, refused.errors[0]?.code]).toEqual([200, 200, 429, "rate_limited"])
    const withoutKey = await request(limited, { method: "GET", url: `/api/v1/api/messages/${sent.data.message_id}` })
    expect([withoutKey.statusCode, JSON.parse(withoutKey.body).errors[0].code]).toEqual([401, "missing_api_key"])
  })
})
