import { afterAll, describe, expect, it } from "vitest"
import { importContacts, makeHandler, makeSharedStorage, makeTenant, phone, UNKNOWN_UUID, type ApiClient } from "./helpers.js"

const storage = makeSharedStorage()
const handler = makeHandler(storage)
afterAll(() => handler.dispose())

const tenant = async () => (await makeTenant(storage, handler)).api

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

const createLabel = async (api: ApiClient, body: Record<string, unknown>) => {
  const result = await api.post("/labels", body)
  expect(result.status, JSON.stringify(result.errors)).toBe(200)
  return result.data as { uuid: string; name: string; color: string; contacts_count: number }
}

const labelCount = async (api: ApiClient) => (await api.get("/labels")).data.pagination.total as number

describe("POST /labels (docs/contacts.md)", () => {
  it("creates a label: data is the record, color defaults to #808080, name trimmed", async () => {
    const api = await tenant()
    const result = await api.post("/labels", { name: "  VIP  " })
    expect(result.status).toBe(200)
    expect(result.data).toEqual({
      uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "VIP",
      color: "#808080",
      contacts_count: 0,
      created_at: expect.stringMatching(ISO_UTC),
      updated_at: expect.stringMatching(ISO_UTC)
    })
  })

  it("accepts #rgb and #rrggbb in any case and stores them lowercase", async () => {
    const api = await tenant()
    expect((await createLabel(api, { name: "a", color: "#abc" })).color).toBe("#abc")
    expect((await createLabel(api, { name: "b", color: "#aabbcc" })).color).toBe("#aabbcc")
    const upper = await createLabel(api, { name: "c", color: "#1E90FF" })
    expect(upper.color).toBe("#1e90ff")
    expect((await api.get(`/labels/${upper.uuid}`)).data.color).toBe("#1e90ff")
    expect((await createLabel(api, { name: "d", color: "#ABC" })).color).toBe("#abc")
  })

  it("400 invalid_format for a color that is not a CSS hex color; 400 invalid_type for a non-string; nothing created", async () => {
    const api = await tenant()
    for (const color of ["red", "#abcd", "abc", "#ggg", "#aabbccd", "", "rgb(0,0,0)"]) {
      const result = await api.post("/labels", { name: "Bad", color })
      expect(result.status, color).toBe(400)
      expect(result.errors.map(({ code, field }) => ({ code, field })), color).toEqual([{ code: "invalid_format", field: "color" }])
    }
    const typed = await api.post("/labels", { name: "Bad", color: 808080 })
    expect(typed.status).toBe(400)
    expect(typed.errors.map(({ code, field }) => ({ code, field }))).toEqual([{ code: "invalid_type", field: "color" }])
    expect(await labelCount(api)).toBe(0)
  })

  it("400 for an empty, missing or too long name", async () => {
    const api = await tenant()
    for (const [body, code] of [
      [{ name: " " }, "required"],
      [{ color: "#fff" }, "required"],
      [{ name: "x".repeat(256) }, "too_long"],
      [{ name: ["VIP"] }, "invalid_type"]
    ] as const) {
      const result = await api.post("/labels", body)
      expect(result.status).toBe(400)
      expect(result.errors.map(({ code, field }) => ({ code, field }))).toEqual([{ code, field: "name" }])
    }
    expect(await labelCount(api)).toBe(0)
  })

  it("400 label_name_taken for a name already used, case-insensitively after trimming", async () => {
    const api = await tenant()
    await createLabel(api, { name: "Lead" })
    for (const name of ["Lead", "LEAD", " lead "]) {
      const result = await api.post("/labels", { name, color: "#000" })
      expect(result.status).toBe(400)
      expect(result.errors).toEqual([{ code: "label_name_taken", field: "name", message: expect.any(String) }])
    }
    expect(await labelCount(api)).toBe(1)
  })
})

describe("GET /labels/{uuid} and GET /labels", () => {
  it("reads one label with its contacts_count; 404 for an unknown uuid, 400 for a malformed one", async () => {
    const api = await tenant()
    const label = await createLabel(api, { name: "VIP", color: "#f00" })
    const { contacts } = await importContacts(api, [
      { first_name: "Ada", phone: phone(1) },
      { first_name: "Alan", phone: phone(2) }
    ])
    await api.post("/contacts/labels/assign", { contact_uuids: contacts.map((contact) => contact.uuid), tag_uuid: label.uuid })
    const read = await api.get(`/labels/${label.uuid}`)
    expect(read.status).toBe(200)
    expect(read.data).toEqual({ ...label, contacts_count: 2, updated_at: expect.stringMatching(ISO_UTC) })
    const unknown = await api.get(`/labels/${UNKNOWN_UUID}`)
    expect(unknown.status).toBe(404)
    expect(unknown.errors[0]?.code).toBe("not_found")
    const malformed = await api.get("/labels/vip")
    expect(malformed.status).toBe(400)
    expect(malformed.errors[0]?.field).toBe("uuid")
  })

  it("lists {labels, pagination} newest first, paginated; past the end is an empty 200", async () => {
    const api = await tenant()
    for (let n = 0; n < 5; n++) await createLabel(api, { name: `L${n}` })
    const first = await api.get("/labels")
    expect(Object.keys(first.data).sort()).toEqual(["labels", "pagination"])
    expect(first.data.pagination).toEqual({ page: 1, per_page: 20, total: 5, total_pages: 1 })
    expect(first.data.labels.map((label: { name: string }) => label.name)).toEqual(["L4", "L3", "L2", "L1", "L0"])
    const second = await api.get("/labels?page=2&per_page=2")
    expect(second.data.labels.map((label: { name: string }) => label.name)).toEqual(["L2", "L1"])
    expect(second.data.pagination).toEqual({ page: 2, per_page: 2, total: 5, total_pages: 3 })
    expect((await api.get("/labels?page=4&per_page=2")).data.labels).toEqual([])
    expect((await api.get("/labels?per_page=101")).status).toBe(400)
  })
})

describe("DELETE /labels/{uuid}", () => {
  it("answers {uuid, deleted: true} and removes the label from its contacts", async () => {
    const api = await tenant()
    const vip = await createLabel(api, { name: "VIP" })
    const kept = await createLabel(api, { name: "Kept" })
    const [contact] = (await importContacts(api, [{ first_name: "Ada", phone: phone(1) }])).contacts
    for (const label of [vip, kept]) await api.post("/contacts/labels/assign", { contact_uuids: contact?.uuid, tag_uuid: label.uuid })
    const deleted = await api.delete(`/labels/${vip.uuid}`)
    expect(deleted.status).toBe(200)
    expect(deleted.data).toEqual({ uuid: vip.uuid, deleted: true })
    const labelsOf = await api.get(`/contacts/${contact?.uuid}/labels`)
    expect(labelsOf.data.labels.map((label: { name: string }) => label.name)).toEqual(["Kept"])
    expect((await api.get(`/contacts/${contact?.uuid}`)).data.labels).toEqual([{ uuid: kept.uuid, name: "Kept", color: "#808080" }])
    expect((await api.get(`/labels/${vip.uuid}`)).status).toBe(404)
  })

  it("a second DELETE is a 404; the name is free again; a malformed uuid is a 400", async () => {
    const api = await tenant()
    const label = await createLabel(api, { name: "Once" })
    expect((await api.delete(`/labels/${label.uuid}`)).status).toBe(200)
    const again = await api.delete(`/labels/${label.uuid}`)
    expect(again.status).toBe(404)
    expect(again.errors[0]?.code).toBe("not_found")
    expect((await api.post("/labels", { name: "once" })).status).toBe(200)
    expect((await api.delete("/labels/not-a-uuid")).status).toBe(400)
  })

  it("a label re-created with the same name is not on the old label's contacts", async () => {
    const api = await tenant()
    const old = await createLabel(api, { name: "Reused" })
    const [contact] = (await importContacts(api, [{ first_name: "Ada", phone: phone(1) }])).contacts
    await api.post("/contacts/labels/assign", { contact_uuids: contact?.uuid, tag_uuid: old.uuid })
    await api.delete(`/labels/${old.uuid}`)
    const fresh = await createLabel(api, { name: "Reused" })
    expect(fresh.contacts_count).toBe(0)
    expect((await api.get(`/contacts/${contact?.uuid}/labels`)).data).toEqual({ labels: [] })
  })
})
