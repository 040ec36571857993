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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const contactByPhone = async (api: ApiClient, e164: string) => {
  const found = (await allContacts(api)).find((contact) => contact.phone === e164)
  expect(found, `no contact with phone ${e164}`).toBeDefined()
  return found as Record<string, unknown>
}

const expectNothingWritten = async (api: ApiClient) => {
  expect((await api.get("/contacts")).data.pagination.total).toBe(0)
  expect((await api.get("/contact-groups")).data.pagination.total).toBe(0)
}

const fieldsOf = (errors: ReadonlyArray<{ code: string; field?: string }>) =>
  errors.map(({ code, field }) => ({ code, field })).sort((a, b) => String(a.field).localeCompare(String(b.field)))

describe("POST /contacts/bulk: upsert by E.164 phone (docs/contacts.md 'Rules')", () => {
  it("creates contacts and answers {created, updated, contacts: [{uuid, phone, status}]}", async () => {
    const api = await tenant()
    const result = await api.post("/contacts/bulk", {
      contacts: [
        { first_name: "Ada", last_name: "Lovelace", phone: "+1 415 555 0100", email: "ada@example.com", city: "London" },
        { first_name: "Alan", phone: phone(1) }
      ]
    })
    expect(result.status).toBe(200)
    expect(Object.keys(result.data).sort()).toEqual(["contacts", "created", "updated"])
    expect(result.data).toMatchObject({ created: 2, updated: 0 })
    expect(result.data.contacts).toEqual([
      { uuid: expect.stringMatching(UUID), phone: "+14155550100", status: "created" },
      { uuid: expect.stringMatching(UUID), phone: phone(1), status: "created" }
    ])
    const ada = await contactByPhone(api, "+14155550100")
    expect(ada).toMatchObject({ uuid: result.data.contacts[0].uuid, first_name: "Ada", last_name: "Lovelace", email: "ada@example.com", city: "London" })
  })

  it("treats '+1 415 555 0100' and '+14155550100' as the same contact: the second import updates it", async () => {
    const api = await tenant()
    const first = await importContacts(api, [{ first_name: "Ada", phone: "+1 415 555 0100" }])
    const second = await importContacts(api, [{ first_name: "Adele", phone: "+14155550100" }])
    expect(second).toEqual({ created: 0, updated: 1, contacts: [{ uuid: first.contacts[0]?.uuid, phone: "+14155550100", status: "updated" }] })
    const contacts = await allContacts(api)
    expect(contacts).toHaveLength(1)
    expect(contacts[0]).toMatchObject({ first_name: "Adele", phone: "+14155550100" })
  })

  it("merges duplicate rows of one batch: later fields win, one entry per phone in first-seen order", async () => {
    const api = await tenant()
    const [existing] = (await importContacts(api, [{ first_name: "Old", phone: phone(9) }])).contacts
    const result = await importContacts(api, [
      { first_name: "Ann", phone: "+1 415 555 0100", city: "Paris" },
      { first_name: "Bob", phone: phone(2) },
      { first_name: "Kept", phone: phone(9) },
      { first_name: "Anna", phone: "+14155550100", last_name: "Lee" },
      { first_name: "Bobby", phone: phone(2), email: "bob@example.com" }
    ])
    expect(result).toEqual({
      created: 2,
      updated: 1,
      contacts: [
        { uuid: expect.stringMatching(UUID), phone: "+14155550100", status: "created" },
        { uuid: expect.stringMatching(UUID), phone: phone(2), status: "created" },
        { uuid: existing?.uuid, phone: phone(9), status: "updated" }
      ]
    })
    expect(await contactByPhone(api, "+14155550100")).toMatchObject({ first_name: "Anna", last_name: "Lee", city: "Paris" })
    expect(await contactByPhone(api, phone(2))).toMatchObject({ first_name: "Bobby", email: "bob@example.com" })
    expect(await allContacts(api)).toHaveLength(3)
  })

  it("keeps the fields a row leaves out when it updates a contact", async () => {
    const api = await tenant()
    await importContacts(api, [
      { first_name: "Ada", last_name: "Lovelace", phone: phone(3), email: "ada@example.com", street: "1 Main St", city: "London", state: "LDN", zip: "N1", country: "UK" }
    ])
    await importContacts(api, [{ first_name: "Augusta", phone: phone(3), city: "Paris" }])
    expect(await contactByPhone(api, phone(3))).toMatchObject({
      first_name: "Augusta",
      last_name: "Lovelace",
      email: "ada@example.com",
      street: "1 Main St",
      city: "Paris",
      state: "LDN",
      zip: "N1",
      country: "UK"
    })
  })
})

describe("POST /contacts/bulk: groups", () => {
  it("adds contacts to groups by name, matching existing names case-insensitively after trimming", async () => {
    const api = await tenant()
    const vip = await api.post("/contact-groups", { name: "VIP" })
    await importContacts(api, [
      { first_name: "Ada", phone: phone(1), group: [" vip "] },
      { first_name: "Alan", phone: phone(2), group: ["VIP", "Newsletter"] }
    ])
    const groups = (await api.get("/contact-groups")).data
    expect(groups.pagination.total).toBe(2)
    const byName = Object.fromEntries(groups.groups.map((group: { name: string }) => [group.name, group]))
    expect(byName.VIP).toMatchObject({ uuid: vip.data.uuid, contacts_count: 2 })
    expect(byName.Newsletter).toMatchObject({ contacts_count: 1 })
    expect((await contactByPhone(api, phone(1))).groups).toEqual([{ uuid: vip.data.uuid, name: "VIP" }])
  })

  it("creates a missing group once per batch, with the trimmed name, whatever the case of each mention", async () => {
    const api = await tenant()
    await importContacts(api, [
      { first_name: "Ada", phone: phone(1), group: ["  Friends  "] },
      { first_name: "Alan", phone: phone(2), group: ["FRIENDS", "friends"] }
    ])
    const groups = (await api.get("/contact-groups")).data.groups
    expect(groups).toHaveLength(1)
    expect(groups[0]).toMatchObject({ name: "Friends", contacts_count: 2 })
  })

  it("adds contacts to an existing group given by uuid, and only adds groups on update", async () => {
    const api = await tenant()
    const group = (await api.post("/contact-groups", { name: "Customers" })).data
    await importContacts(api, [{ first_name: "Ada", phone: phone(1), group: ["Leads"] }])
    await importContacts(api, [{ first_name: "Ada", phone: phone(1), group: [group.uuid] }])
    const groups = (await contactByPhone(api, phone(1))).groups as Array<{ name: string }>
    expect(groups.map((entry) => entry.name).sort()).toEqual(["Customers", "Leads"])
    expect(await importContacts(api, [{ first_name: "Ada", phone: phone(1) }])).toMatchObject({ updated: 1 })
    expect(((await contactByPhone(api, phone(1))).groups as Array<unknown>).length).toBe(2)
  })

  it("400 group_not_found naming contacts[i].group[j] for an unknown uuid; nothing written", async () => {
    const api = await tenant()
    const result = await api.post("/contacts/bulk", {
      contacts: [
        { first_name: "Ada", phone: phone(1), group: ["New group"] },
        { first_name: "Alan", phone: phone(2), group: ["Other", UNKNOWN_UUID] }
      ]
    })
    expect(result.status).toBe(400)
    expect(result.errors).toEqual([{ code: "group_not_found", field: "contacts[1].group[1]", message: expect.any(String) }])
    await expectNothingWritten(api)
  })
})

describe("POST /contacts/bulk: validation, all or nothing", () => {
  it("400 for 0 rows, 1001 rows, a missing or non-array contacts; nothing written", async () => {
    const api = await tenant()
    for (const body of [{ contacts: [] }, { contacts: contactRows(0, 1001) }, {}, { contacts: "everyone" }]) {
      const result = await api.post("/contacts/bulk", body)
      expect(result.status).toBe(400)
      expect(result.errors.map((error) => error.field)).toContain("contacts")
    }
    await expectNothingWritten(api)
  })

  it("accepts exactly 1000 rows", async () => {
    const api = await tenant()
    expect(await importContacts(api, contactRows(0, 1000))).toMatchObject({ created: 1000, updated: 0 })
    expect((await api.get("/contacts")).data.pagination.total).toBe(1000)
  })

  it("lists every bad row (required, invalid_format) and writes nothing", async () => {
    const api = await tenant()
    const result = await api.post("/contacts/bulk", {
      contacts: [
        { first_name: "Ok", phone: phone(1), group: ["Team"] },
        { first_name: "No phone" },
        { phone: phone(2) },
        { first_name: "Bad mail", phone: phone(3), email: "not-an-email" },
        { first_name: "Bad phone", phone: "12345" },
        { first_name: "   ", phone: phone(5) }
      ]
    })
    expect(result.status).toBe(400)
    expect(fieldsOf(result.errors)).toEqual([
      { code: "required", field: "contacts[1].phone" },
      { code: "required", field: "contacts[2].first_name" },
      { code: "invalid_format", field: "contacts[3].email" },
      { code: "invalid_format", field: "contacts[4].phone" },
      { code: "required", field: "contacts[5].first_name" }
    ])
    await expectNothingWritten(api)
  })

  it("lists a type error and a format error of different rows together", async () => {
    const api = await tenant()
    const result = await api.post("/contacts/bulk", {
      contacts: [
        { first_name: "Typed", phone: 31612345678 },
        { first_name: "Bad mail", phone: phone(1), email: "nope" }
      ]
    })
    expect(result.status).toBe(400)
    expect(fieldsOf(result.errors)).toEqual([
      { code: "invalid_type", field: "contacts[0].phone" },
      { code: "invalid_format", field: "contacts[1].email" }
    ])
    await expectNothingWritten(api)
  })

  it("400 invalid_type for wrong types, naming each field", async () => {
    const api = await tenant()
    const result = await api.post("/contacts/bulk", {
      contacts: [
        { first_name: 42, phone: phone(1) },
        { first_name: "Ada", phone: phone(2), group: "VIP" },
        { first_name: "Ada", phone: phone(3), group: [7] },
        { first_name: "Ada", phone: phone(4), email: true, city: ["x"] },
        "not an object",
        null,
        [{ first_name: "Ada", phone: phone(6) }]
      ]
    })
    expect(result.status).toBe(400)
    const fields = fieldsOf(result.errors).filter((error) => error.code === "invalid_type").map((error) => error.field)
    expect(fields).toEqual(
      expect.arrayContaining(["contacts[0].first_name", "contacts[1].group", "contacts[2].group[0]", "contacts[3].email", "contacts[3].city", "contacts[4]", "contacts[5]", "contacts[6]"])
    )
    await expectNothingWritten(api)
  })

  it("400 too_long for a field over 255 characters", async () => {
    const api = await tenant()
    const result = await api.post("/contacts/bulk", { contacts: [{ first_name: "x".repeat(256), phone: phone(1) }] })
    expect(result.status).toBe(400)
    expect(fieldsOf(result.errors)).toEqual([{ code: "too_long", field: "contacts[0].first_name" }])
  })

  it("drops unknown fields: not stored, not echoed", async () => {
    const api = await tenant()
    const result = await api.post("/contacts/bulk", {
      contacts: [
        { first_name: "Ada", phone: phone(1), uuid: UNKNOWN_UUID, admin: true, created_at: "2000-01-01T00:00:00.000Z", labels: ["x"], notes: "secret" }
      ],
      dry_run: true
    })
    expect(result.status).toBe(200)
    expect(Object.keys(result.data.contacts[0]).sort()).toEqual(["phone", "status", "uuid"])
    expect(result.data.contacts[0].uuid).not.toBe(UNKNOWN_UUID)
    const [contact] = await allContacts(api)
    expect(contact).not.toHaveProperty("admin")
    expect(contact).not.toHaveProperty("notes")
    expect(contact?.labels).toEqual([])
    expect(contact?.created_at).not.toBe("2000-01-01T00:00:00.000Z")
    expect(JSON.stringify(result.data)).not.toContain("secret")
  })
})
