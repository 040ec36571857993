import { describe, expect, it } from "vitest"
import { Effect } from "effect"
import { Core, Templates } from "@switchboard/core"
import {
  apiClient,
  bearer,
  contactRows,
  expectEnvelope,
  importContacts,
  listen,
  makeHandler,
  makeTenant,
  phone,
  request,
  UNKNOWN_UUID,
  type ApiClient
} from "./helpers.js"
import { useSendQueueSetup } from "./send-queue-helpers.js"

// Broadcasts over HTTP (docs/broadcasts.md), through the WhatsApp simulator as the Graph
// API: creation and its checks, the start in the background, per-recipient placeholders,
// opt-outs (131050) skipped by later MARKETING broadcasts, a stop on Meta's template pause,
// cancel, scheduling, Idempotency-Key and tenant isolation.

// No attempt here is meant to time out: on a busy machine the helpers' 400 ms could, and an
// attempt of unknown outcome is tried again (docs/messaging.md "Unknown outcomes"), which the
// "each contact once" counts below would read as a duplicate.
const { simulator, setup } = useSendQueueSetup({ appSecret: "broadcast-app-secret", numberBase: 8_800_000, waitMs: 15_000, timeoutMs: 10_000 })

/** A MARKETING template with one body placeholder. */
const springSale = {
  name: "spring_sale",
  language: "en_US",
  category: "MARKETING",
  status: "APPROVED",
  components: [{ type: "BODY", text: "Hi {{1}}, our spring sale starts today.", example: { body_text: [["Ada"]] } }]
}

/** The send object of spring_sale with the body parameter `text`. */
const sale = (text: string) => ({
  name: "spring_sale",
  language: { code: "en_US" },
  components: [{ type: "body", parameters: [{ type: "text", text }] }]
})

type Setup = Awaited<ReturnType<typeof setup>>

/** A tenant with the spring_sale template too. */
const saleSetup = async (options: Parameters<typeof setup>[0] = {}) => {
  const made = await setup(options)
  await Effect.runPromise(
    Effect.flatMap(Templates, (templates) => templates.create(made.organization.id, springSale)).pipe(
      Effect.provide(Core.layer),
      Effect.provide(made.storage)
    )
  )
  return made
}

/** A group named `name` holding `rows` (imported); its uuid and the contacts. */
const groupOf = async (api: ApiClient, name: string, rows: ReadonlyArray<Record<string, unknown>>) => {
  const imported = await importContacts(api, rows.map((row) => ({ ...row, group: [name] })))
  const groups = await api.get("/contact-groups?per_page=100")
  const group = (groups.data.groups as Array<{ uuid: string; name: string }>).find((each) => each.name === name)!
  return { groupUuid: group.uuid, contacts: imported.contacts }
}

/** Polls `GET /broadcasts/{uuid}` until `done`. */
const broadcastWhen = async (api: ApiClient, uuid: string, done: (broadcast: Record<string, any>) => boolean, waitMs = 15_000) => {
  const deadline = Date.now() + waitMs
  for (;;) {
    const result = await api.get(`/broadcasts/${uuid}`)
    expect(result.status).toBe(200)
    if (done(result.data)) return result.data as Record<string, any>
    if (Date.now() > deadline) throw new Error(`broadcast ${uuid} never reached the expected state: ${JSON.stringify(result.data)}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Every recipient of a broadcast, following the cursor. */
const allRecipients = async (api: ApiClient, uuid: string, status?: string) => {
  const recipients: Array<Record<string, any>> = []
  let cursor: string | null = null
  do {
    const query: string = [status === undefined ? "" : `status=${status}`, "limit=100", cursor === null ? "" : `cursor=${cursor}`].filter(Boolean).join("&")
    const page = await api.get(`/broadcasts/${uuid}/recipients?${query}`)
    expect(page.status, JSON.stringify(page.errors)).toBe(200)
    recipients.push(...page.data.recipients)
    cursor = page.data.pagination.next_cursor
  } while (cursor !== null)
  return recipients
}

/** The body parameter texts the simulator received per recipient phone (digits) of a setup's number. */
const receivedTexts = (made: Setup) => {
  const byPhone = new Map<string, Array<string>>()
  for (const send of simulator().sends(made.number.phone_number_id)) {
    const body = send.body as { to: string; template?: { components?: Array<{ parameters?: Array<{ text?: string }> }> } }
    const text = body.template?.components?.[0]?.parameters?.[0]?.text ?? ""
    byPhone.set(body.to.replace(/\D/g, ""), [...(byPhone.get(body.to.replace(/\D/g, "")) ?? []), text])
  }
  return byPhone
}

describe("POST /broadcasts: a broadcast to a group", () => {
  it("sends each contact once with its first name filled in; a 131050 refusal fails alone and opts the contact out; a later MARKETING broadcast skips it", async () => {
    const made = await saleSetup()
    const { api } = made
    // Contact 7 has a last name: "{{contact.last_name|friend}}" falls back for all the others.
    const rows = contactRows(100, 40).map((row, index) => (index === 7 ? { ...row, last_name: "Hopper" } : row))
    const { groupUuid, contacts } = await groupOf(api, "Spring", rows)
    const refused = contacts[3]!
    simulator().script.refuseRecipient(refused.phone, { code: 131050, http_status: 400 })
    const created = await api.post("/broadcasts", {
      name: "Spring sale",
      template: sale("{{contact.first_name|there}} {{contact.last_name|friend}}"),
      audience: { group_uuids: [groupUuid] }
    })
    expect([created.status, created.message], JSON.stringify(created.errors)).toEqual([200, "Broadcast sending"])
    expect(created.data).toMatchObject({
      name: "Spring sale",
      status: "sending",
      template: sale("{{contact.first_name|there}} {{contact.last_name|friend}}"),
      audience: { group_uuids: [groupUuid], label_uuids: [], contact_uuids: [] },
      channel_uuid: made.channelId,
      send_at: null,
      completed_at: null,
      stopped_reason: null
    })
    const done = await broadcastWhen(api, created.data.uuid, (b) => b.status === "completed")
    expect(done.counts).toEqual({ total: 40, queued: 0, sending: 0, sent: 39, delivered: 0, read: 0, failed: 1 })
    expect(done.completed_at).not.toBeNull()
    const texts = receivedTexts(made)
    for (const [index, row] of rows.entries()) {
      const digits = row.phone.replace(/\D/g, "")
      if (row.phone === refused.phone) continue
      expect(texts.get(digits), row.phone).toEqual([`${row.first_name} ${index === 7 ? "Hopper" : "friend"}`])
    }
    const failed = await allRecipients(api, created.data.uuid, "failed")
    expect(failed.map((r) => [r.contact_uuid, r.phone, r.failure?.code])).toEqual([[refused.uuid, refused.phone, "131050"]])
    const contact = await api.get(`/contacts/${refused.uuid}`)
    expect(contact.data.marketing_opt_out_at).toEqual(expect.any(String))
    // Each recipient is a message of its contact's chat, with the broadcast's uuid.
    const [first] = await allRecipients(api, created.data.uuid, "sent")
    const message = await api.get(`/messages/${first!.message_uuid}`)
    expect(message.data).toMatchObject({ broadcast_uuid: created.data.uuid, contact_uuid: first!.contact_uuid, status: "sent", type: "template" })

    const again = await api.post("/broadcasts", { name: "Second", template: sale("friend"), audience: { group_uuids: [groupUuid] } })
    expect(again.status).toBe(200)
    const second = await broadcastWhen(api, again.data.uuid, (b) => b.status === "completed")
    expect(second.counts).toMatchObject({ total: 40, sent: 39, failed: 1 })
    const skipped = await allRecipients(api, again.data.uuid, "failed")
    expect(skipped.map((r) => [r.contact_uuid, r.failure?.code])).toEqual([[refused.uuid, "opted_out"]])
    const sendsToRefused = simulator().sends(made.number.phone_number_id).filter((s) => (s.body as { to: string }).to.replace(/\D/g, "") === refused.phone.replace(/\D/g, ""))
    expect(sendsToRefused).toHaveLength(1)
    // Clearing the opt-out lets the next broadcast reach it.
    const cleared = await api.put(`/contacts/${refused.uuid}`, { marketing_opt_out_at: null })
    expect([cleared.status, cleared.data.marketing_opt_out_at]).toEqual([200, null])
    const refusedSet = await api.put(`/contacts/${refused.uuid}`, { marketing_opt_out_at: "2026-01-01T00:00:00Z" })
    expect([refusedSet.status, refusedSet.errors[0]?.field]).toEqual([400, "marketing_opt_out_at"])
    // Two broadcasts of 40 through the send queue: seconds on a loaded machine (PostgreSQL).
  }, 30_000)

  it("a recipient whose placeholder has no value and no fallback fails alone with missing_parameter", async () => {
    const { api } = await saleSetup()
    const { groupUuid, contacts } = await groupOf(api, "Mixed", [
      { first_name: "Ada", last_name: "Lovelace", phone: phone(1) },
      { first_name: "Grace", phone: phone(2) }
    ])
    const created = await api.post("/broadcasts", { name: "Surname", template: sale("Dear {{contact.last_name}}"), audience: { group_uuids: [groupUuid] } })
    const done = await broadcastWhen(api, created.data.uuid, (b) => b.status === "completed")
    expect(done.counts).toMatchObject({ total: 2, sent: 1, failed: 1 })
    const failed = await allRecipients(api, created.data.uuid, "failed")
    expect(failed.map((r) => [r.contact_uuid, r.failure?.code])).toEqual([[contacts.find((c) => c.phone === phone(2))!.uuid, "missing_parameter"]])
  })

  it("Meta pausing the template (132015) stops the broadcast; its waiting recipients fail with that code", async () => {
    const made = await saleSetup({ throughputMps: 5 })
    const { api } = made
    const rows = contactRows(300, 12)
    const { groupUuid } = await groupOf(api, "Paused", rows)
    // Meta refuses the template for every recipient: whichever goes first stops the broadcast
    // (the order of recipients, and how many are in flight by then, depend on the machine).
    for (const row of rows) simulator().script.refuseRecipient(row.phone, { code: 132015, http_status: 400 })
    const created = await api.post("/broadcasts", { name: "Pause", template: sale("you"), audience: { group_uuids: [groupUuid] } })
    const stopped = await broadcastWhen(api, created.data.uuid, (b) => b.status === "stopped")
    expect(stopped.stopped_reason).toMatchObject({ code: "132015" })
    expect(stopped.counts.queued).toBe(0)
    const after = await broadcastWhen(api, created.data.uuid, (b) => b.counts.sending === 0)
    expect(after.counts.failed).toBeGreaterThanOrEqual(after.counts.total - 3)
    expect((await allRecipients(api, created.data.uuid, "failed")).filter((r) => r.failure?.code === "132015").length).toBeGreaterThanOrEqual(8)
  }, 30_000)
})

describe("the start shares the event loop", () => {
  it("requests over a socket are answered while a 3 000-recipient start is still writing", async () => {
    const made = await saleSetup({ throughputMps: 1 })
    const { api } = made
    for (let from = 0; from < 3_000; from += 1_000) {
      await importContacts(api, contactRows(20_000 + from, 1_000).map((row) => ({ ...row, group: ["Many"] })))
    }
    const groups = await api.get("/contact-groups?per_page=100")
    const groupUuid = (groups.data.groups as Array<{ uuid: string; name: string }>).find((each) => each.name === "Many")!.uuid
    const server = await listen(made.handler)
    try {
      const created = await server.fetchApi(made.apiKey, "POST", "/broadcasts", { name: "Many", template: sale("x"), audience: { group_uuids: [groupUuid] } })
      // Each total is read by a request the server must read from its socket: a start that
      // held the event loop would answer them only before it began or after it ended.
      const totals: Array<number> = []
      for (;;) {
        const total = (await server.fetchApi(made.apiKey, "GET", `/broadcasts/${created.data.uuid}`)).data.counts.total as number
        totals.push(total)
        if (total === 3_000) break
      }
      expect(totals.some((total) => total > 0 && total < 3_000), `totals read: ${totals.join(" ")}`).toBe(true)
      await api.post(`/broadcasts/${created.data.uuid}/cancel`, {})
    } finally {
      await server.close()
    }
  }, 30_000)
})

describe("sharing the channel", () => {
  it("single sends go before the broadcast's waiting recipients on the same channel", async () => {
    const made = await saleSetup({ throughputMps: 4 })
    const { api } = made
    const { groupUuid } = await groupOf(api, "Crowd", contactRows(1_000, 20))
    const created = await api.post("/broadcasts", { name: "Crowd", template: sale("x"), audience: { group_uuids: [groupUuid] } })
    await broadcastWhen(api, created.data.uuid, (b) => b.counts.total === 20 && b.counts.sent >= 1)
    const single = await api.post("/send/template", { phone: phone(1_100), template: sale("single") })
    expect(single.status).toBe(200)
    const deadline = Date.now() + 5_000
    let message = (await api.get(`/messages/${single.data.message_id}`)).data
    while (message.status !== "sent" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      message = (await api.get(`/messages/${single.data.message_id}`)).data
    }
    expect(message.status).toBe("sent")
    // Sent after the broadcast's recipients already claimed (the slots a claim reserves
    // ahead: PACING_HORIZON_MS at 4 × 0.95 messages/s), while most of the broadcast has
    // still not gone (queued, or claimed for a later slot).
    const broadcast = (await api.get(`/broadcasts/${created.data.uuid}`)).data
    expect(broadcast.counts.queued + broadcast.counts.sending).toBeGreaterThan(10)
    await api.post(`/broadcasts/${created.data.uuid}/cancel`, {})
  })

  it("Meta's spam limit (131048) stops the broadcast and pauses the channel", async () => {
    const made = await saleSetup({ throughputMps: 5 })
    const { api } = made
    const { groupUuid } = await groupOf(api, "Spam", contactRows(1_200, 8))
    simulator().script.refuseRecipient(phone(1_200), { code: 131048, http_status: 400 })
    const created = await api.post("/broadcasts", { name: "Spam", template: sale("x"), audience: { group_uuids: [groupUuid] } })
    const stopped = await broadcastWhen(api, created.data.uuid, (b) => b.status === "stopped")
    expect([stopped.stopped_reason.code, stopped.counts.queued]).toEqual(["131048", 0])
    const channel = (await api.get(`/channels/${made.channelId}`)).data
    expect(channel.status).toBe("paused")
  })
})

describe("POST /broadcasts: checks", () => {
  it("answers 400 or 404 naming each problem, and writes nothing", async () => {
    const { api } = await saleSetup()
    const { groupUuid } = await groupOf(api, "Checks", contactRows(500, 2))
    const empty = await api.post("/contact-groups", { name: "Empty" })
    const cases: Array<[unknown, number, string, string | undefined]> = [
      [{ template: sale("x"), audience: { group_uuids: [groupUuid] } }, 400, "invalid_input", "name"],
      [{ name: "A", template: sale("x"), audience: {} }, 400, "invalid_input", "audience"],
      [{ name: "A", template: sale("x"), audience: { group_uuids: ["nope"] } }, 400, "invalid_input", "audience.group_uuids[0]"],
      [{ name: "A", template: sale("{{contact.city}}"), audience: { group_uuids: [groupUuid] } }, 400, "invalid_input", "template.components[0].parameters[0].text"],
      [{ name: "A", template: sale("x"), audience: { group_uuids: [groupUuid] }, send_at: "tomorrow" }, 400, "invalid_input", "send_at"],
      [{ name: "A", template: { ...sale("x"), name: "missing" }, audience: { group_uuids: [groupUuid] } }, 400, "template_not_found", "template.name"],
      [{ name: "A", template: { ...sale("x"), components: [] }, audience: { group_uuids: [groupUuid] } }, 400, "template_parameters_mismatch", "template.components"],
      [{ name: "A", template: sale("x"), audience: { group_uuids: [UNKNOWN_UUID] } }, 404, "not_found", "audience.group_uuids[0]"],
      [{ name: "A", template: sale("x"), audience: { group_uuids: [groupUuid] }, channel_uuid: UNKNOWN_UUID }, 404, "not_found", "channel_uuid"],
      [{ name: "A", template: sale("x"), audience: { group_uuids: [empty.data.uuid] } }, 400, "empty_audience", "audience"]
    ]
    for (const [body, status, code, field] of cases) {
      const result = await api.post("/broadcasts", body)
      expect([result.status, result.errors.map((e) => e.field)], JSON.stringify(body)).toEqual([status, expect.arrayContaining([field])])
      if (code !== "invalid_input") expect(result.errors.map((e) => e.code)).toContain(code)
    }
    expect((await api.get("/broadcasts")).data.broadcasts).toEqual([])
  })

  it("another organization's broadcast is a 404 on every route; its group is a 404 in an audience", async () => {
    const made = await saleSetup()
    const { groupUuid } = await groupOf(made.api, "Mine", contactRows(600, 1))
    const created = await made.api.post("/broadcasts", { name: "Mine", template: sale("x"), audience: { group_uuids: [groupUuid] }, send_at: "2099-01-01T00:00:00Z" })
    expect(created.data.status).toBe("scheduled")
    const other = await makeTenant(made.storage, made.handler)
    for (const path of [`/broadcasts/${created.data.uuid}`, `/broadcasts/${created.data.uuid}/recipients`]) {
      expect((await other.api.get(path)).status).toBe(404)
    }
    expect((await other.api.post(`/broadcasts/${created.data.uuid}/cancel`, {})).status).toBe(404)
    expect((await other.api.get("/broadcasts")).data.broadcasts).toEqual([])
    // The other organization has the template too: only the group's owner stands in the way.
    await Effect.runPromise(
      Effect.flatMap(Templates, (templates) => templates.create(other.organization.id, springSale)).pipe(
        Effect.provide(Core.layer),
        Effect.provide(made.storage)
      )
    )
    const theirs = await other.api.post("/broadcasts", { name: "X", template: sale("x"), audience: { group_uuids: [groupUuid] } })
    expect([theirs.status, theirs.errors.map((e) => [e.code, e.field])]).toEqual([404, [["not_found", "audience.group_uuids[0]"]]])
  })

  it("Idempotency-Key: the same key answers the same broadcast and starts it once", async () => {
    const made = await saleSetup()
    const { groupUuid } = await groupOf(made.api, "Idem", contactRows(700, 3))
    const body = JSON.stringify({ name: "Once", template: sale("x"), audience: { group_uuids: [groupUuid] } })
    const post = async () => {
      const response = await request(made.handler, {
        method: "POST",
        url: "/api/v1/api/broadcasts",
        headers: { ...bearer(made.apiKey), "content-type": "application/json", "idempotency-key": "broadcast-1" },
        payload: body
      })
      return expectEnvelope(response.statusCode, response.body)
    }
    const first = await post()
    const second = await post()
    expect(second.data.uuid).toBe(first.data.uuid)
    const list = await made.api.get("/broadcasts")
    expect(list.data.broadcasts.map((b: { uuid: string }) => b.uuid)).toEqual([first.data.uuid])
    await broadcastWhen(made.api, first.data.uuid, (b) => b.status === "completed")
    expect(simulator().sends(made.number.phone_number_id)).toHaveLength(3)
  })
})

describe("rate limits", () => {
  it("POST /broadcasts counts once in the send bucket, whatever the audience's size", async () => {
    const made = await saleSetup()
    const { groupUuid } = await groupOf(made.api, "Bucket", contactRows(1_300, 5))
    // No dispatch here: the broadcasts are scheduled far ahead, only their requests count.
    const limited = makeHandler(made.storage, { rateLimit: { send: { max: 2 } }, dispatch: { messages: false, webhooks: false } })
    try {
      const api = apiClient(limited, made.apiKey)
      const body = { template: sale("x"), audience: { group_uuids: [groupUuid] }, send_at: "2099-01-01T00:00:00Z" }
      // Five recipients, one request each: a second broadcast still fits the bucket of 2, a third does not.
      expect((await api.post("/broadcasts", { ...body, name: "One" })).status).toBe(200)
      expect((await api.post("/broadcasts", { ...body, name: "Two" })).status).toBe(200)
      const third = await api.post("/broadcasts", { ...body, name: "Three" })
      expect([third.status, third.errors[0]?.code]).toEqual([429, "rate_limited"])
      expect((await api.get("/broadcasts")).status).toBe(200)
    } finally {
      await limited.dispose()
    }
  })
})

describe("scheduling and cancelling", () => {
  it("a scheduled broadcast starts within a second of its send_at", async () => {
    const made = await saleSetup()
    const { groupUuid } = await groupOf(made.api, "Later", contactRows(800, 2))
    const sendAt = new Date(Date.now() + 1_500).toISOString()
    const created = await made.api.post("/broadcasts", { name: "Later", template: sale("x"), audience: { group_uuids: [groupUuid] }, send_at: sendAt })
    expect([created.message, created.data.status, created.data.send_at, created.data.started_at]).toEqual(["Broadcast scheduled", "scheduled", sendAt, null])
    const started = await broadcastWhen(made.api, created.data.uuid, (b) => b.status !== "scheduled", 5_000)
    expect(Date.parse(started.started_at) - Date.parse(sendAt)).toBeGreaterThanOrEqual(0)
    expect(Date.parse(started.started_at) - Date.parse(sendAt)).toBeLessThan(1_000)
    await broadcastWhen(made.api, created.data.uuid, (b) => b.status === "completed")
  })

  it("cancelling a running broadcast leaves no recipient queued; a second cancel is a 409", async () => {
    const made = await saleSetup({ throughputMps: 2 })
    const { groupUuid } = await groupOf(made.api, "Slow", contactRows(900, 20))
    const created = await made.api.post("/broadcasts", { name: "Slow", template: sale("x"), audience: { group_uuids: [groupUuid] } })
    await broadcastWhen(made.api, created.data.uuid, (b) => b.counts.total === 20 && b.counts.sent >= 1)
    const cancelled = await made.api.post(`/broadcasts/${created.data.uuid}/cancel`, {})
    expect([cancelled.status, cancelled.data.status, cancelled.data.counts.queued]).toEqual([200, "cancelled", 0])
    const recipients = await allRecipients(made.api, created.data.uuid)
    expect(recipients.filter((r) => r.status === "queued")).toEqual([])
    expect(recipients.filter((r) => r.failure?.code === "cancelled").length).toBeGreaterThan(10)
    const twice = await made.api.post(`/broadcasts/${created.data.uuid}/cancel`, {})
    expect([twice.status, twice.errors.length >= 0, (twice as { message: string }).message]).toEqual([409, true, expect.stringContaining("cancelled")])
    const sentBefore = simulator().sends(made.number.phone_number_id).length
    await new Promise((resolve) => setTimeout(resolve, 1_200))
    expect(simulator().sends(made.number.phone_number_id).length).toBeLessThanOrEqual(sentBefore + 1)
  })
})
