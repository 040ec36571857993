import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { ChannelVerifier, FileBlobStore, generateSecretKey } from "@switchboard/core"
import { receive } from "./chats-helpers.js"
import { allContacts, bearer, contactRows, expectEnvelope, importContacts, listen, makeHandler, makeSharedStorage, makeTenant, phone, type ApiClient } from "./helpers.js"

const storage = makeSharedStorage()
const handler = makeHandler(storage)
afterAll(() => handler.dispose())

/**
 * Two organizations on one store: the owner has a contact in a group carrying a label;
 * the intruder has a contact and a label of its own.
 */
const setUp = async () => {
  const owner = (await makeTenant(storage, handler, { name: "Owner" })).api
  const intruder = (await makeTenant(storage, handler, { name: "Intruder" })).api
  const [contact] = (await importContacts(owner, [{ first_name: "Ada", phone: phone(1), group: ["Customers"] }])).contacts
  const label = (await owner.post("/labels", { name: "VIP", color: "#f00" })).data
  await owner.post("/contacts/labels/assign", { contact_uuids: contact?.uuid, tag_uuid: label.uuid })
  const group = (await owner.get("/contact-groups")).data.groups[0]
  const [ownContact] = (await importContacts(intruder, [{ first_name: "Eve", phone: phone(2) }])).contacts
  const ownLabel = (await intruder.post("/labels", { name: "Mine" })).data
  return {
    owner,
    intruder,
    contactId: contact?.uuid as string,
    labelId: label.uuid as string,
    groupId: group.uuid as string,
    ownContactId: ownContact?.uuid as string,
    ownLabelId: ownLabel.uuid as string
  }
}

/** Everything the owner can see, to compare before and after the intruder's attempts. */
const snapshot = async (api: ApiClient) => ({
  contacts: (await api.get("/contacts")).data,
  groups: (await api.get("/contact-groups")).data,
  labels: (await api.get("/labels")).data
})

const expectNotFound = (result: { status: number; errors: ReadonlyArray<{ code: string }> }) => {
  expect(result.status).toBe(404)
  expect(result.errors.length).toBeGreaterThan(0)
  for (const error of result.errors) expect(error.code).toBe("not_found")
}

describe("tenant isolation (docs/contacts.md 'Rules')", () => {
  it("another organization's key cannot read, change or delete the contacts, groups, labels or messages: 404, data unchanged", async () => {
    const { owner, intruder, contactId, labelId, groupId } = await setUp()
    const messageId = (await owner.post("/send", { phone: phone(1), message: "Private" })).data.message_id as string
    const before = await snapshot(owner)
    expectNotFound(await intruder.get(`/messages/${messageId}`))
    expectNotFound(await intruder.post(`/messages/${messageId}/retry`, {}))
    expectNotFound(await intruder.post(`/messages/${messageId}/cancel`, {}))
    const message = (await owner.get(`/messages/${messageId}`)).data
    expectNotFound(await intruder.post(`/messages/${messageId}/reaction`, { emoji: "👍" }))
    expect((await owner.get(`/messages/${messageId}`)).data).toEqual(message)
    expectNotFound(await intruder.get(`/contacts/${contactId}`))
    expectNotFound(await intruder.get(`/contacts/${contactId}/labels`))
    expectNotFound(await intruder.get(`/labels/${labelId}`))
    expectNotFound(await intruder.put(`/contacts/${contactId}`, { first_name: "Hacked", email: null }))
    expectNotFound(await intruder.put(`/contact-groups/${groupId}`, { name: "Hacked" }))
    expectNotFound(await intruder.delete(`/contacts/${contactId}`))
    expectNotFound(await intruder.delete(`/labels/${labelId}`))
    expect(await snapshot(owner)).toEqual(before)
  })

  it("lists never show another organization's records", async () => {
    const { owner, intruder, ownContactId, ownLabelId } = await setUp()
    const contacts = (await intruder.get("/contacts")).data
    expect(contacts.pagination.total).toBe(1)
    expect(contacts.contacts.map((contact: { uuid: string }) => contact.uuid)).toEqual([ownContactId])
    expect((await intruder.get("/contact-groups")).data).toEqual({ groups: [], pagination: { page: 1, per_page: 20, total: 0, total_pages: 0 } })
    expect((await intruder.get("/labels")).data.labels.map((label: { uuid: string }) => label.uuid)).toEqual([ownLabelId])
    expect((await owner.get("/contacts")).data.pagination.total).toBe(1)
    expect((await owner.get("/labels")).data.pagination.total).toBe(1)
  })

  it("assign → 404 for another organization's contact or label, nothing changed on either side", async () => {
    const { owner, intruder, contactId, labelId, ownContactId, ownLabelId } = await setUp()
    const before = await snapshot(owner)
    const foreignContact = await intruder.post("/contacts/labels/assign", { contact_uuids: [ownContactId, contactId], tag_uuid: ownLabelId })
    expectNotFound(foreignContact)
    expect(foreignContact.errors).toHaveLength(1)
    expect(foreignContact.errors[0]?.message).toContain(contactId)
    expectNotFound(await intruder.post("/contacts/labels/assign", { contact_uuids: ownContactId, tag_uuid: labelId }))
    expect((await intruder.get(`/contacts/${ownContactId}/labels`)).data).toEqual({ labels: [] })
    expect(await snapshot(owner)).toEqual(before)
  })

  it("bulk-delete reports another organization's labels as not_found and leaves them alone", async () => {
    const { owner, intruder, labelId, ownLabelId } = await setUp()
    const result = await intruder.post("/labels/bulk-delete", { tag_uuids: [labelId, ownLabelId] })
    expect(result.status).toBe(200)
    expect(result.data).toEqual({ deleted: 1, tag_uuids: [ownLabelId], not_found: [labelId] })
    const still = await owner.get(`/labels/${labelId}`)
    expect(still.status).toBe(200)
    expect(still.data).toMatchObject({ name: "VIP", contacts_count: 1 })
  })

  it("bulk import cannot add contacts to another organization's group by uuid: 400 group_not_found", async () => {
    const { owner, intruder, groupId } = await setUp()
    const before = await snapshot(owner)
    const result = await intruder.post("/contacts/bulk", { contacts: [{ first_name: "Eve", phone: phone(3), group: [groupId] }] })
    expect(result.status).toBe(400)
    expect(result.errors).toEqual([{ code: "group_not_found", field: "contacts[0].group[0]", message: expect.any(String) }])
    expect((await intruder.get("/contacts")).data.pagination.total).toBe(1)
    expect(await snapshot(owner)).toEqual(before)
  })

  it("the same phone, label name and group name may exist in both organizations, independently", async () => {
    const { owner, intruder, contactId } = await setUp()
    const imported = await importContacts(intruder, [{ first_name: "Other Ada", phone: "+31 6 1000 0001", group: ["customers"] }])
    expect(imported).toMatchObject({ created: 1, updated: 0 })
    expect(imported.contacts[0]?.uuid).not.toBe(contactId)
    expect((await intruder.post("/labels", { name: "vip" })).status).toBe(200)
    expect((await intruder.post("/contact-groups", { name: "Leads" })).status).toBe(200)
    expect((await owner.post("/contact-groups", { name: "leads" })).status).toBe(200)
    const owned = await owner.get(`/contacts/${contactId}`)
    expect(owned.data).toMatchObject({ first_name: "Ada", phone: phone(1), groups: [{ name: "Customers" }], labels: [{ name: "VIP" }] })
    expect((await owner.get("/contact-groups")).data.groups.find((g: { name: string }) => g.name === "Customers").contacts_count).toBe(1)
    expect((await allContacts(owner)).map((contact) => contact.first_name)).toEqual(["Ada"])
  })

  it("PUT may give a contact a phone another organization uses", async () => {
    const { owner, intruder, contactId, ownContactId } = await setUp()
    const result = await intruder.put(`/contacts/${ownContactId}`, { phone: "+31 6 1000 0001" })
    expect(result.status).toBe(200)
    expect(result.data.phone).toBe(phone(1))
    expect((await owner.get(`/contacts/${contactId}`)).data).toMatchObject({ first_name: "Ada", phone: phone(1) })
  })

  it("plan limits count only the organization's own records", async () => {
    const { owner } = await setUp()
    await importContacts(owner, contactRows(100, 5))
    for (const name of ["A", "B"]) await owner.post("/labels", { name })
    const small = (await makeTenant(storage, handler, { name: "Small", plan: { contacts_limit: 2, label_limit: 1 } })).api
    expect(await importContacts(small, contactRows(100, 2))).toMatchObject({ created: 2 })
    expect((await small.post("/labels", { name: "A" })).status).toBe(200)
    expect((await small.post("/labels", { name: "B" })).status).toBe(403)
  })

  it("another organization's key cannot read, change or remove a channel: 404, the channel unchanged", async () => {
    // Channels need a secret key; Meta's check passes for every token here.
    const channelStorage = makeSharedStorage()
    const channelHandler = makeHandler(channelStorage, {
      secretKey: Buffer.alloc(32, 7).toString("base64"),
      channelVerifier: Layer.succeed(ChannelVerifier, { verify: () => Effect.succeed({ display_phone_number: "+15550783881" }) })
    })
    try {
      const owner = (await makeTenant(channelStorage, channelHandler, { name: "Owner" })).api
      const intruder = (await makeTenant(channelStorage, channelHandler, { name: "Intruder" })).api
      const channel = (await owner.post("/channels", { phone_number_id: "106540352249001", waba_id: "1", access_token: `EAAG${"o".repeat(30)}` })).data
      expectNotFound(await intruder.get(`/channels/${channel.uuid}`))
      expectNotFound(await intruder.put(`/channels/${channel.uuid}`, { access_token: `EAAG${"i".repeat(30)}`, throughput_mps: 1 }))
      expectNotFound(await intruder.post(`/channels/${channel.uuid}/resume`, {}))
      expectNotFound(await intruder.delete(`/channels/${channel.uuid}`))
      expect((await intruder.get("/channels")).data.channels).toEqual([])
      expect((await owner.get(`/channels/${channel.uuid}`)).data).toEqual({
        ...channel,
        queue: { queued: 0, sending: 0, oldest_queued_at: null },
        template_sync: { last_run_at: null, outcome: null, error: null }
      })
    } finally {
      await channelHandler.dispose()
    }
  })

  it("another organization's key cannot read, change, rotate or remove a webhook endpoint: 404, the endpoint and its secret unchanged", async () => {
    // Endpoints need a secret key (their signing secrets are sealed); no dispatcher, no DNS.
    const hookStorage = makeSharedStorage()
    const hookHandler = makeHandler(hookStorage, {
      secretKey: Buffer.alloc(32, 5).toString("base64"),
      webhooks: { dispatch: false, allowPrivateNetworks: true }
    })
    try {
      const owner = (await makeTenant(hookStorage, hookHandler, { name: "Owner" })).api
      const intruder = (await makeTenant(hookStorage, hookHandler, { name: "Intruder" })).api
      const { secret: _secret, ...endpoint } = (await owner.post("/webhook-endpoints", { url: "https://hooks.example.com/owner" })).data
      expectNotFound(await intruder.get(`/webhook-endpoints/${endpoint.uuid}`))
      expectNotFound(await intruder.put(`/webhook-endpoints/${endpoint.uuid}`, { enabled: false }))
      expectNotFound(await intruder.post(`/webhook-endpoints/${endpoint.uuid}/rotate-secret`, {}))
      expectNotFound(await intruder.post(`/webhook-endpoints/${endpoint.uuid}/rotate-secret`, { previous_secret_expires_in: 0, force: true }))
      expectNotFound(await intruder.get(`/webhook-endpoints/${endpoint.uuid}/deliveries`))
      expectNotFound(await intruder.delete(`/webhook-endpoints/${endpoint.uuid}`))
      expect((await intruder.get("/webhook-endpoints")).data.webhook_endpoints).toEqual([])
      expect((await owner.get(`/webhook-endpoints/${endpoint.uuid}`)).data).toEqual(endpoint)
      // The owner's own rotation is not in progress: the intruder's attempts rotated nothing.
      expect((await owner.post(`/webhook-endpoints/${endpoint.uuid}/rotate-secret`, {})).status).toBe(200)
    } finally {
      await hookHandler.dispose()
    }
  })

  it("another organization's key cannot read the owner's chat: 404, the chat still unread", async () => {
    const owner = await makeTenant(storage, handler, { name: "Owner" })
    const intruder = (await makeTenant(storage, handler, { name: "Intruder" })).api
    const chat = await receive(storage, owner.organization.id, phone(1), 1, { provider_message_id: "wamid.owner" })
    expect(chat.unread_count).toBe(1)
    const before = { chat: (await owner.api.get(`/chats/${chat.uuid}`)).data, messages: (await owner.api.get(`/chats/${chat.uuid}/messages`)).data }
    expectNotFound(await intruder.post(`/chats/${chat.uuid}/read`, {}))
    expectNotFound(await intruder.post(`/chats/${chat.uuid}/read`, { typing: true }))
    const after = { chat: (await owner.api.get(`/chats/${chat.uuid}`)).data, messages: (await owner.api.get(`/chats/${chat.uuid}/messages`)).data }
    expect(after).toEqual(before)
    expect(after.chat).toMatchObject({ unread: true, unread_count: 1 })
    expect(after.messages.messages.map((message: { status: string }) => message.status)).toEqual(["delivered"])
  })

  it("another organization's key cannot read or cancel the owner's scheduled and interactive messages: 404, still scheduled", async () => {
    const { owner, intruder } = await setUp()
    const sendAt = new Date(Date.now() + 60_000).toISOString()
    const interactive = {
      type: "button",
      body: { text: "Does Tuesday suit you?" },
      action: { buttons: [{ type: "reply", reply: { id: "yes", title: "Yes" } }] }
    }
    const scheduledText = await owner.post("/send", { phone: phone(1), message: "See you at 8", send_at: sendAt })
    const scheduledInteractive = await owner.post("/send/interactive", { phone: phone(1), interactive, send_at: sendAt })
    const sentInteractive = await owner.post("/send/interactive", { phone: phone(1), interactive })
    expect([scheduledText.data.status, scheduledInteractive.data.status, sentInteractive.data.status]).toEqual(["scheduled", "scheduled", "sent"])
    const ids = [scheduledText, scheduledInteractive, sentInteractive].map((sent) => sent.data.message_id as string)
    const read = async () => Promise.all(ids.map(async (id) => (await owner.get(`/messages/${id}`)).data))
    const before = await read()
    for (const id of ids) {
      expectNotFound(await intruder.get(`/messages/${id}`))
      expectNotFound(await intruder.post(`/messages/${id}/cancel`, {}))
    }
    const after = await read()
    expect(after).toEqual(before)
    expect(after.map((message: { type: string; status: string }) => [message.type, message.status])).toEqual([
      ["text", "scheduled"],
      ["interactive", "scheduled"],
      ["interactive", "sent"]
    ])
    expect((await intruder.get("/chats")).data.chats).toEqual([])
  })

  it("an interactive send whose header names another organization's stored file: 404 naming the field, nothing written", async () => {
    const directory = mkdtempSync(join(tmpdir(), "switchboard-tenant-isolation-media-"))
    const mediaStorage = makeSharedStorage()
    const mediaHandler = makeHandler(mediaStorage, { secretKey: generateSecretKey(), media: { store: FileBlobStore.layer({ directory }) } })
    const server = await listen(mediaHandler)
    try {
      const owner = await makeTenant(mediaStorage, mediaHandler, { name: "Owner" })
      const intruder = (await makeTenant(mediaStorage, mediaHandler, { name: "Intruder" })).api
      // A PNG's signature and header chunk, then an IDAT chunk of random bytes.
      const png = Buffer.concat([
        Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489000003e849444154", "hex"),
        randomBytes(1_004)
      ])
      const form = new FormData()
      form.append("file", new Blob([png], { type: "image/png" }), "banner.png")
      const uploaded = await fetch(`${server.base}/media`, { method: "POST", headers: bearer(owner.apiKey), body: form })
      const record = expectEnvelope(uploaded.status, await uploaded.text())
      expect([record.status, record.data.type, record.data.status]).toEqual([200, "image", "stored"])
      const mediaUuid = record.data.uuid as string
      // The owner's own send names it without complaint.
      const interactive = {
        type: "button",
        header: { type: "image", image: { media_uuid: mediaUuid } },
        body: { text: "Our new menu" },
        action: { buttons: [{ type: "reply", reply: { id: "more", title: "Tell me more" } }] }
      }
      expect((await owner.api.post("/send/interactive", { phone: phone(1), interactive })).status).toBe(200)
      const ownerBefore = { media: (await owner.api.get(`/media/${mediaUuid}`)).data, chats: (await owner.api.get("/chats")).data }
      const refused = await intruder.post("/send/interactive", { phone: phone(2), interactive })
      expectNotFound(refused)
      expect(refused.errors.map((error) => error.field)).toEqual(["interactive.header.image.media_uuid"])
      expect((await intruder.get("/contacts")).data.pagination.total).toBe(0)
      expect((await intruder.get("/chats")).data.chats).toEqual([])
      expect((await intruder.get("/media")).data.media).toEqual([])
      expect({ media: (await owner.api.get(`/media/${mediaUuid}`)).data, chats: (await owner.api.get("/chats")).data }).toEqual(ownerBefore)
    } finally {
      await server.close()
      await mediaHandler.dispose()
      rmSync(directory, { recursive: true, force: true })
    }
  })
})
