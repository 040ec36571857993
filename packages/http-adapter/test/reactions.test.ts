import { afterAll, describe, expect, it } from "vitest"
import type { OrganizationId } from "@switchboard/core"
import { inboundMessagePayload, textMessage } from "@switchboard/whatsapp-simulator"
import { BASE_TIME, receive } from "./chats-helpers.js"
import { bearer, makeHandler, makeSharedStorage, makeTenant, phone, request, type ApiClient } from "./helpers.js"
import { useSendQueueSetup } from "./send-queue-helpers.js"

// `POST /messages/{uuid}/reaction` (docs/messaging.md "Reacting as the business"): refusals
// write nothing; through a channel Meta's reaction reaches the simulator, and the message
// reacted to shows it once sent; "" takes it back; an Idempotency-Key sends it once.

const storage = makeSharedStorage()
const handler = makeHandler(storage)
afterAll(() => handler.dispose())

/** `receive`'s minutes (after its fixed base time) for `n` minutes before now. */
const minutesAgo = (n: number): number => Math.floor((Date.now() - BASE_TIME) / 60_000) - n

/** The newest message of the organization's only chat, as listed. */
const onlyMessage = async (api: ApiClient) => {
  const [chat] = (await api.get("/chats")).data.chats
  const messages = (await api.get(`/chats/${chat.uuid}/messages`)).data.messages as Array<Record<string, any>>
  return { chat, messages, message: messages[0]! }
}

describe("POST /messages/{uuid}/reaction: refusals, nothing written", () => {
  it("400 naming emoji; 404 for an unknown message; 409 message_not_reactable no_channel and no_provider_id", async () => {
    const { api, organization } = await makeTenant(storage, handler)
    await receive(storage, organization.id as OrganizationId, phone(1), minutesAgo(10), { provider_message_id: "wamid.http-reaction-1" })
    const { chat, message } = await onlyMessage(api)
    for (const emoji of ["ok", "👍👍", 1, null]) {
      const refused = await api.post(`/messages/${message.uuid}/reaction`, { emoji })
      expect([refused.status, refused.errors[0]?.field], JSON.stringify(emoji)).toEqual([400, "emoji"])
    }
    const missing = await api.post(`/messages/${message.uuid}/reaction`, {})
    expect([missing.status, missing.errors[0]?.field]).toEqual([400, "emoji"])
    const unknown = await api.post("/messages/8f0f0b5e-1f7c-4a57-9a07-3b8e25e3a001/reaction", { emoji: "👍" })
    expect([unknown.status, unknown.errors[0]?.code]).toEqual([404, "not_found"])
    const noChannel = await api.post(`/messages/${message.uuid}/reaction`, { emoji: "👍" })
    expect([noChannel.status, noChannel.errors]).toEqual([409, [{ code: "message_not_reactable", message: expect.any(String), reason: "no_channel" }]])
    await receive(storage, organization.id as OrganizationId, phone(1), minutesAgo(5))
    const anonymous = (await onlyMessage(api)).message
    const noProviderId = await api.post(`/messages/${anonymous.uuid}/reaction`, { emoji: "👍" })
    expect([noProviderId.status, (noProviderId.errors[0] as { reason?: string } | undefined)?.reason]).toEqual([409, "no_provider_id"])
    // More than 30 days old.
    await receive(storage, organization.id as OrganizationId, phone(1), minutesAgo(31 * 24 * 60), { provider_message_id: "wamid.http-reaction-old" })
    const old = (await api.get(`/chats/${chat.uuid}/messages`)).data.messages.at(-1)
    expect(old.provider_message_id).toBe("wamid.http-reaction-old")
    const tooOld = await api.post(`/messages/${old.uuid}/reaction`, { emoji: "👍" })
    expect([tooOld.status, (tooOld.errors[0] as { reason?: string } | undefined)?.reason]).toEqual([409, "too_old"])
    // Nothing written: the chat lists the three inbound messages, none with a reaction.
    const after = (await api.get(`/chats/${chat.uuid}/messages`)).data.messages as Array<Record<string, any>>
    expect(after.map((each) => [each.direction, each.reactions])).toEqual([["inbound", []], ["inbound", []], ["inbound", []]])
    expect((await api.get(`/messages/${message.uuid}`)).data).toEqual(message)
  })
})

describe("POST /messages/{uuid}/reaction through a channel and the simulator", () => {
  const { simulator, setup, postWebhook, messageWhen } = useSendQueueSetup({
    appSecret: "reaction-app-secret",
    numberBase: 106540352320000,
    waitMs: 8_000
  })

  it("sends Meta's reaction; the message shows the business's reaction once sent; \"\" takes it back", async () => {
    const setupOf = await setup()
    const to = phone(2)
    await postWebhook(setupOf, JSON.stringify(inboundMessagePayload({ number: setupOf.number, from: to, profile_name: "Sheena", message: textMessage("Is it ready?") })))
    const { chat, message } = await onlyMessage(setupOf.api)
    const reacted = await setupOf.api.post(`/messages/${message.uuid}/reaction`, { emoji: "👍" })
    expect(reacted.status).toBe(200)
    expect(["Reaction sent", "Reaction queued"]).toContain(reacted.message)
    expect(reacted.data.uuid).toBe(message.uuid)
    // Sent in the request, or (a networked store under load) by the dispatcher moments later.
    const shown = await messageWhen(setupOf.api, message.uuid, (each) => each.reactions.length > 0)
    expect(shown.reactions).toEqual([{ emoji: "👍", by: "business", at: expect.any(String) }])
    const sends = () => simulator().sends(setupOf.number.phone_number_id).filter((each) => each.wamid !== null)
    expect(sends().map((each) => each.body)).toEqual([
      expect.objectContaining({ to: to.slice(1), type: "reaction", reaction: { message_id: message.provider_message_id, emoji: "👍" } })
    ])
    // The reaction is never listed.
    const listed = (await setupOf.api.get(`/chats/${chat.uuid}/messages`)).data.messages as Array<Record<string, any>>
    expect(listed.map((each) => each.uuid)).toEqual([message.uuid])

    const removed = await setupOf.api.post(`/messages/${message.uuid}/reaction`, { emoji: "" })
    expect(removed.status).toBe(200)
    const cleared = await messageWhen(setupOf.api, message.uuid, (each) => each.reactions.length === 0)
    expect(cleared.reactions).toEqual([])
    expect(sends().at(-1)!.body).toMatchObject({ type: "reaction", reaction: { message_id: message.provider_message_id, emoji: "" } })
  })

  it("an Idempotency-Key replays the first answer and sends the reaction once", async () => {
    const setupOf = await setup()
    const to = phone(3)
    await postWebhook(setupOf, JSON.stringify(inboundMessagePayload({ number: setupOf.number, from: to, profile_name: "Ravi", message: textMessage("Hi") })))
    const { message } = await onlyMessage(setupOf.api)
    const post = () =>
      request(setupOf.handler, {
        method: "POST",
        url: `/api/v1/api/messages/${message.uuid}/reaction`,
        headers: { ...bearer(setupOf.apiKey), "content-type": "application/json", "idempotency-key": "react-once" },
        payload: JSON.stringify({ emoji: "❤️" })
      })
    const first = await post()
    const second = await post()
    expect([first.statusCode, second.statusCode]).toEqual([200, 200])
    expect(second.headers["idempotent-replayed"]).toBe("true")
    expect(JSON.parse(second.body).data.uuid).toBe(message.uuid)
    await messageWhen(setupOf.api, message.uuid, (each) => each.reactions.length > 0)
    const reactions = simulator().sends(setupOf.number.phone_number_id).filter((each) => (each.body as { type?: string }).type === "reaction")
    expect(reactions).toHaveLength(1)
  })

  it("the contact never wrote on the channel the reaction would go through: 400 outside_customer_service_window, nothing sent", async () => {
    const setupOf = await setup()
    // Received through no channel: the reaction goes through the organization's channel, where the contact never wrote.
    await receive(setupOf.storage, setupOf.organization.id as OrganizationId, phone(4), minutesAgo(10), { provider_message_id: "wamid.http-reaction-window" })
    const { message } = await onlyMessage(setupOf.api)
    const refused = await setupOf.api.post(`/messages/${message.uuid}/reaction`, { emoji: "👍" })
    expect([refused.status, refused.errors[0]?.code]).toEqual([400, "outside_customer_service_window"])
    expect((await setupOf.api.get(`/messages/${message.uuid}`)).data).toEqual(message)
    expect(simulator().sends(setupOf.number.phone_number_id)).toEqual([])
  })
})
