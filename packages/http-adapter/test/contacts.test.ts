import { afterAll, describe, expect, it } from "vitest"
import {
  allContacts,
  contactRows,
  importContacts,
  makeHandler,
  makeSharedStorage,
  makeTenant,
  phone,
  UNKNOWN_UUID,
  type ApiClient
} from "./helpers.js"

const storage = makeSharedStorage()
const handler = makeHandler(storage)
afterAll(() => handler.dispose())

const tenant = async () => (await makeTenant(storage, handler)).api

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/
const CONTACT_KEYS = [
  "city",
  "country",
  "created_at",
  "email",
  "first_name",
  "groups",
  "labels",
  "last_name",
  "marketing_opt_out_at",
  "phone",
  "phone_valid",
  "state",
  "street",
  "updated_at",
  "uuid",
  "zip"
]

/** Imports one contact and returns its uuid. */
const createContact = async (api: ApiClient, row: Record<string, unknown>) =>
  (await importContacts(api, [row])).contacts[0]?.uuid as string

describe("GET /contacts (docs/http-api.md 'Pagination', docs/contacts.md 'Records')", () => {
  it("defaults to page 1 of 20 and answers {contacts, pagination: {page, per_page, total, total_pages}}", async () => {
    const api = await tenant()
    await importContacts(api, contactRows(0, 25))
    const result = await api.get("/contacts")
    expect(result.status).toBe(200)
    expect(Object.keys(result.data).sort()).toEqual(["contacts", "pagination"])
    expect(result.data.contacts).toHaveLength(20)
    expect(result.data.pagination).toEqual({ page: 1, per_page: 20, total: 25, total_pages: 2 })
  })

  it("pages through every contact once; a page past the end is an empty 200", async () => {
    const api = await tenant()
    await importContacts(api, contactRows(0, 25))
    const first = (await api.get("/contacts?page=1&per_page=10")).data
    const third = (await api.get("/contacts?page=3&per_page=10")).data
    expect(third.contacts).toHaveLength(5)
    expect(third.pagination).toEqual({ page: 3, per_page: 10, total: 25, total_pages: 3 })
    const second = (await api.get("/contacts?page=2&per_page=10")).data
    const seen = [...first.contacts, ...second.contacts, ...third.contacts].map((contact: { phone: string }) => contact.phone)
    expect(new Set(seen).size).toBe(25)
    const past = await api.get("/contacts?page=4&per_page=10")
    expect(past.status).toBe(200)
    expect(past.data).toEqual({ contacts: [], pagination: { page: 4, per_page: 10, total: 25, total_pages: 3 } })
    expect((await api.get("/contacts?per_page=100")).data.contacts).toHaveLength(25)
  })

  it("an organization without contacts has an empty first page", async () => {
    const api = await tenant()
    expect((await api.get("/contacts")).data).toEqual({ contacts: [], pagination: { page: 1, per_page: 20, total: 0, total_pages: 0 } })
  })

  it("lists newest first; an update does not move a contact", async () => {
    const api = await tenant()
    for (const n of [1, 2, 3]) await createContact(api, { first_name: `C${n}`, phone: phone(n) })
    await importContacts(api, [{ first_name: "C1 again", phone: phone(1) }])
    expect((await allContacts(api)).map((contact) => contact.first_name)).toEqual(["C3", "C2", "C1 again"])
  })

  it("400 naming the parameter for page=0, page=1.5, per_page=0, per_page=101, per_page=abc", async () => {
    const api = await tenant()
    for (const [query, field] of [
      ["page=0", "page"],
      ["page=1.5", "page"],
      ["page=abc", "page"],
      ["per_page=0", "per_page"],
      ["per_page=101", "per_page"],
      ["per_page=abc", "per_page"]
    ] as const) {
      const result = await api.get(`/contacts?${query}`)
      expect(result.status, query).toBe(400)
      expect(result.errors.map((error) => error.field), query).toEqual([field])
    }
  })

  it("shows each contact exactly as docs/contacts.md 'Records' says, the same in the list and alone", async () => {
    const api = await tenant()
    const uuid = await createContact(api, {
      first_name: "Ada",
      last_name: "Lovelace",
      phone: "+1 (415) 555-0100",
      email: "ada@example.com",
      street: "12 St James's Square",
      city: "London",
      state: "LDN",
      zip: "SW1Y 4JH",
      country: "UK",
      group: ["Pioneers"]
    })
    const label = (await api.post("/labels", { name: "Math", color: "#1E90FF" })).data
    await api.post("/contacts/labels/assign", { contact_uuids: uuid, tag_uuid: label.uuid })
    const [listed] = await allContacts(api)
    expect(Object.keys(listed ?? {}).sort()).toEqual(CONTACT_KEYS)
    expect(listed).toEqual({
      uuid,
      created_at: expect.stringMatching(ISO_UTC),
      updated_at: expect.stringMatching(ISO_UTC),
      first_name: "Ada",
      last_name: "Lovelace",
      phone: "+14155550100",
      phone_valid: true,
      marketing_opt_out_at: null,
      email: "ada@example.com",
      street: "12 St James's Square",
      city: "London",
      state: "LDN",
      zip: "SW1Y 4JH",
      country: "UK",
      groups: [{ uuid: expect.any(String), name: "Pioneers" }],
      labels: [{ uuid: label.uuid, name: "Math", color: "#1e90ff" }]
    })
    const alone = await api.get(`/contacts/${uuid}`)
    expect(alone.status).toBe(200)
    expect(alone.data).toEqual(listed)
  })

  it("fields never given are null", async () => {
    const api = await tenant()
    await createContact(api, { first_name: "Solo", phone: phone(1) })
    expect((await allContacts(api))[0]).toMatchObject({
      last_name: null,
      email: null,
      street: null,
      city: null,
      state: null,
      zip: null,
      country: null,
      groups: [],
      labels: []
    })
  })
})

describe("GET, PUT, DELETE /contacts/{uuid}", () => {
  it("400 for a malformed uuid and 404 not_found for an unknown one, on every method", async () => {
    const api = await tenant()
    for (const call of [
      (path: string) => api.get(path),
      (path: string) => api.put(path, { first_name: "X" }),
      (path: string) => api.delete(path),
      (path: string) => api.get(`${path}/labels`)
    ]) {
      const malformed = await call("/contacts/not-a-uuid")
      expect(malformed.status).toBe(400)
      expect(malformed.errors[0]?.field).toBe("uuid")
      const unknown = await call(`/contacts/${UNKNOWN_UUID}`)
      expect(unknown.status).toBe(404)
      expect(unknown.errors[0]?.code).toBe("not_found")
    }
  })

  it("reads uuids case-insensitively: an uppercase uuid names the same contact", async () => {
    const api = await tenant()
    const uuid = await createContact(api, { first_name: "Ada", phone: phone(1) })
    const upper = uuid.toUpperCase()
    expect((await api.get(`/contacts/${upper}`)).data.uuid).toBe(uuid)
    expect((await api.get(`/contacts/${upper}/labels`)).status).toBe(200)
    expect((await api.put(`/contacts/${upper}`, { first_name: "Augusta" })).data).toMatchObject({ id: uuid, uuid })
    expect((await api.delete(`/contacts/${upper}`)).data).toEqual({ uuid, deleted: true })
  })

  it("PUT is partial: fields left out are kept; data is {id, message, ...contact} with id = uuid", async () => {
    const api = await tenant()
    const uuid = await createContact(api, { first_name: "Ada", last_name: "Lovelace", phone: phone(1), email: "ada@example.com", city: "London" })
    const before = (await api.get(`/contacts/${uuid}`)).data
    const result = await api.put(`/contacts/${uuid}`, { first_name: "  Augusta  " })
    expect(result.status).toBe(200)
    expect(result.data).toEqual({ ...before, id: uuid, message: expect.any(String), first_name: "Augusta", updated_at: expect.stringMatching(ISO_UTC) })
    expect(result.data.updated_at >= before.updated_at).toBe(true)
    const { id: _id, message: _message, ...record } = result.data
    expect((await api.get(`/contacts/${uuid}`)).data).toEqual(record)
  })

  it("PUT with null clears last_name and email; null first_name or phone is a 400", async () => {
    const api = await tenant()
    const uuid = await createContact(api, { first_name: "Ada", last_name: "Lovelace", phone: phone(1), email: "ada@example.com" })
    const cleared = await api.put(`/contacts/${uuid}`, { last_name: null, email: null })
    expect(cleared.data).toMatchObject({ first_name: "Ada", last_name: null, email: null, phone: phone(1) })
    for (const body of [{ first_name: null }, { phone: null }, { first_name: "" }]) {
      const result = await api.put(`/contacts/${uuid}`, body)
      expect(result.status, JSON.stringify(body)).toBe(400)
      expect(result.errors[0]?.field).toBe(Object.keys(body)[0])
    }
    expect((await api.get(`/contacts/${uuid}`)).data).toMatchObject({ first_name: "Ada", phone: phone(1) })
  })

  it("PUT normalises the phone; the old phone is free afterwards; the own phone in another format is fine", async () => {
    const api = await tenant()
    const uuid = await createContact(api, { first_name: "Ada", phone: phone(1) })
    expect((await api.put(`/contacts/${uuid}`, { phone: "+1 (415) 555-0100" })).data.phone).toBe("+14155550100")
    expect((await api.put(`/contacts/${uuid}`, { phone: "+1 415 555 0100" })).status).toBe(200)
    expect(await importContacts(api, [{ first_name: "New", phone: phone(1) }])).toMatchObject({ created: 1 })
  })

  it("PUT with the phone of another contact → 400 phone_taken, nothing changed", async () => {
    const api = await tenant()
    const ada = await createContact(api, { first_name: "Ada", phone: phone(1) })
    await createContact(api, { first_name: "Alan", phone: "+14155550100" })
    const result = await api.put(`/contacts/${ada}`, { first_name: "Changed", phone: "+1 415 555 0100" })
    expect(result.status).toBe(400)
    expect(result.errors).toEqual([{ code: "phone_taken", field: "phone", message: expect.any(String) }])
    expect((await api.get(`/contacts/${ada}`)).data).toMatchObject({ first_name: "Ada", phone: phone(1) })
  })

  it("PUT → 400 for an invalid email or phone and for wrong types, naming each field; nothing changed", async () => {
    const api = await tenant()
    const uuid = await createContact(api, { first_name: "Ada", phone: phone(1), email: "ada@example.com" })
    const invalid = await api.put(`/contacts/${uuid}`, { email: "not-an-email", phone: "12345", first_name: "Changed" })
    expect(invalid.status).toBe(400)
    expect(invalid.errors.map(({ code, field }) => ({ code, field }))).toEqual(
      expect.arrayContaining([{ code: "invalid_format", field: "email" }, { code: "invalid_format", field: "phone" }])
    )
    const typed = await api.put(`/contacts/${uuid}`, { first_name: 7, email: false })
    expect(typed.status).toBe(400)
    expect(typed.errors.map((error) => error.code)).toEqual(["invalid_type", "invalid_type"])
    expect((await api.get(`/contacts/${uuid}`)).data).toMatchObject({ first_name: "Ada", email: "ada@example.com", phone: phone(1) })
  })

  it("PUT ignores fields it does not take (street, uuid, groups)", async () => {
    const api = await tenant()
    const uuid = await createContact(api, { first_name: "Ada", phone: phone(1), street: "Main St" })
    const result = await api.put(`/contacts/${uuid}`, { street: "Elsewhere", uuid: UNKNOWN_UUID, groups: [{ name: "x" }], admin: true })
    expect(result.status).toBe(200)
    expect(result.data).toMatchObject({ id: uuid, uuid, street: "Main St", groups: [] })
    expect(result.data).not.toHaveProperty("admin")
  })

  it("DELETE → {uuid, deleted: true}; afterwards 404 everywhere and gone from lists and groups", async () => {
    const api = await tenant()
    const uuid = await createContact(api, { first_name: "Ada", phone: phone(1), group: ["Team"] })
    await createContact(api, { first_name: "Alan", phone: phone(2), group: ["Team"] })
    const deleted = await api.delete(`/contacts/${uuid}`)
    expect(deleted.status).toBe(200)
    expect(deleted.data).toEqual({ uuid, deleted: true })
    expect((await api.get(`/contacts/${uuid}`)).status).toBe(404)
    expect((await api.delete(`/contacts/${uuid}`)).status).toBe(404)
    expect((await api.put(`/contacts/${uuid}`, { first_name: "Back" })).status).toBe(404)
    expect((await allContacts(api)).map((contact) => contact.first_name)).toEqual(["Alan"])
    expect((await api.get("/contact-groups")).data.groups[0]).toMatchObject({ name: "Team", contacts_count: 1 })
  })
})

describe("GET /contacts/{uuid}/labels", () => {
  it("answers {labels: [...]} with the labels the contact carries", async () => {
    const api = await tenant()
    const uuid = await createContact(api, { first_name: "Ada", phone: phone(1) })
    const other = await createContact(api, { first_name: "Alan", phone: phone(2) })
    expect((await api.get(`/contacts/${uuid}/labels`)).data).toEqual({ labels: [] })
    const vip = (await api.post("/labels", { name: "VIP", color: "#ff0000" })).data
    const lead = (await api.post("/labels", { name: "Lead" })).data
    await api.post("/labels", { name: "Unused" })
    await api.post("/contacts/labels/assign", { contact_uuids: [uuid], tag_uuid: vip.uuid })
    await api.post("/contacts/labels/assign", { contact_uuids: [uuid, other], tag_uuid: lead.uuid })
    const result = await api.get(`/contacts/${uuid}/labels`)
    expect(result.status).toBe(200)
    expect(Object.keys(result.data)).toEqual(["labels"])
    expect(result.data.labels.map((label: { uuid: string }) => label.uuid).sort()).toEqual([vip.uuid, lead.uuid].sort())
    expect(result.data.labels.find((label: { uuid: string }) => label.uuid === vip.uuid)).toMatchObject({ name: "VIP", color: "#ff0000" })
  })
})
