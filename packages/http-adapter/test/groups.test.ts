import { afterAll, describe, expect, it } from "vitest"
import { allContacts, importContacts, makeHandler, makeSharedStorage, makeTenant, phone, UNKNOWN_UUID } from "./helpers.js"

const storage = makeSharedStorage()
const handler = makeHandler(storage)
afterAll(() => handler.dispose())

const tenant = async () => (await makeTenant(storage, handler)).api

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

describe("POST /contact-groups (docs/contacts.md)", () => {
  it("creates a group: data {id, message, ...group} with id = uuid and the trimmed name", async () => {
    const api = await tenant()
    const result = await api.post("/contact-groups", { name: "  Customers  " })
    expect(result.status).toBe(200)
    expect(result.data).toEqual({
      id: result.data.uuid,
      message: expect.any(String),
      uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "Customers",
      contacts_count: 0,
      created_at: expect.stringMatching(ISO_UTC),
      updated_at: expect.stringMatching(ISO_UTC)
    })
    expect(typeof result.data.message).toBe("string")
    expect((await api.get("/contact-groups")).data.groups).toEqual([
      { uuid: result.data.uuid, name: "Customers", contacts_count: 0, created_at: result.data.created_at, updated_at: result.data.updated_at }
    ])
  })

  it("400 for an empty, blank, missing or non-string name; nothing created", async () => {
    const api = await tenant()
    for (const [body, code] of [
      [{ name: "" }, "required"],
      [{ name: "   " }, "required"],
      [{}, "required"],
      [{ name: 42 }, "invalid_type"],
      [{ name: null }, "required"]
    ] as const) {
      const result = await api.post("/contact-groups", body)
      expect(result.status, JSON.stringify(body)).toBe(400)
      expect(result.errors.map(({ code, field }) => ({ code, field })), JSON.stringify(body)).toEqual([{ code, field: "name" }])
    }
    expect((await api.get("/contact-groups")).data.pagination.total).toBe(0)
  })

  it("accepts 255 characters after trimming; 256 → 400 too_long", async () => {
    const api = await tenant()
    expect((await api.post("/contact-groups", { name: ` ${"a".repeat(255)} ` })).status).toBe(200)
    const tooLong = await api.post("/contact-groups", { name: "b".repeat(256) })
    expect(tooLong.status).toBe(400)
    expect(tooLong.errors).toEqual([{ code: "too_long", field: "name", message: expect.any(String) }])
  })

  it("400 group_name_taken for a name already used, compared case-insensitively after trimming", async () => {
    const api = await tenant()
    await api.post("/contact-groups", { name: "VIP" })
    for (const name of ["VIP", "vip", " Vip "]) {
      const result = await api.post("/contact-groups", { name })
      expect(result.status).toBe(400)
      expect(result.errors).toEqual([{ code: "group_name_taken", field: "name", message: expect.any(String) }])
    }
    expect((await api.get("/contact-groups")).data.pagination.total).toBe(1)
  })
})

describe("PUT /contact-groups/{uuid}", () => {
  it("renames: data {id, message, ...group}; members stay and contacts show the new name", async () => {
    const api = await tenant()
    await importContacts(api, [{ first_name: "Ada", phone: phone(1), group: ["Leads"] }])
    const [group] = (await api.get("/contact-groups")).data.groups
    const result = await api.put(`/contact-groups/${group.uuid}`, { name: " Customers " })
    expect(result.status).toBe(200)
    expect(result.data).toEqual({
      ...group,
      id: group.uuid,
      message: expect.any(String),
      name: "Customers",
      contacts_count: 1,
      updated_at: expect.stringMatching(ISO_UTC)
    })
    expect((await allContacts(api))[0]?.groups).toEqual([{ uuid: group.uuid, name: "Customers" }])
  })

  it("allows the same name in another case for the same group", async () => {
    const api = await tenant()
    const group = (await api.post("/contact-groups", { name: "vip" })).data
    const result = await api.put(`/contact-groups/${group.uuid}`, { name: "VIP" })
    expect(result.status).toBe(200)
    expect(result.data.name).toBe("VIP")
  })

  it("400 group_name_taken when another group has the name; nothing changed", async () => {
    const api = await tenant()
    await api.post("/contact-groups", { name: "Customers" })
    const leads = (await api.post("/contact-groups", { name: "Leads" })).data
    const result = await api.put(`/contact-groups/${leads.uuid}`, { name: "customers" })
    expect(result.status).toBe(400)
    expect(result.errors).toEqual([{ code: "group_name_taken", field: "name", message: expect.any(String) }])
    const names = (await api.get("/contact-groups")).data.groups.map((group: { name: string }) => group.name)
    expect(names.sort()).toEqual(["Customers", "Leads"])
  })

  it("404 not_found for an unknown uuid, 400 for a malformed one or a bad name", async () => {
    const api = await tenant()
    const unknown = await api.put(`/contact-groups/${UNKNOWN_UUID}`, { name: "X" })
    expect(unknown.status).toBe(404)
    expect(unknown.errors[0]?.code).toBe("not_found")
    const malformed = await api.put("/contact-groups/123", { name: "X" })
    expect(malformed.status).toBe(400)
    expect(malformed.errors[0]?.field).toBe("uuid")
    const group = (await api.post("/contact-groups", { name: "Kept" })).data
    for (const body of [{ name: "  " }, {}, { name: "c".repeat(256) }]) {
      const result = await api.put(`/contact-groups/${group.uuid}`, body)
      expect(result.status).toBe(400)
      expect(result.errors[0]?.field).toBe("name")
    }
    expect((await api.get("/contact-groups")).data.groups[0].name).toBe("Kept")
  })
})

describe("GET /contact-groups (extension, paginated)", () => {
  it("answers {groups, pagination} newest first, with contacts_count", async () => {
    const api = await tenant()
    for (const name of ["First", "Second", "Third"]) await api.post("/contact-groups", { name })
    await importContacts(api, [
      { first_name: "Ada", phone: phone(1), group: ["First", "Third"] },
      { first_name: "Alan", phone: phone(2), group: ["first"] }
    ])
    const result = await api.get("/contact-groups")
    expect(result.status).toBe(200)
    expect(Object.keys(result.data).sort()).toEqual(["groups", "pagination"])
    expect(result.data.pagination).toEqual({ page: 1, per_page: 20, total: 3, total_pages: 1 })
    expect(result.data.groups.map((group: { name: string; contacts_count: number }) => [group.name, group.contacts_count])).toEqual([
      ["Third", 1],
      ["Second", 0],
      ["First", 2]
    ])
  })

  it("pages with page and per_page; past the end is an empty 200; bad parameters → 400", async () => {
    const api = await tenant()
    for (let n = 0; n < 5; n++) await api.post("/contact-groups", { name: `Group ${n}` })
    const second = await api.get("/contact-groups?page=2&per_page=2")
    expect(second.data.groups.map((group: { name: string }) => group.name)).toEqual(["Group 2", "Group 1"])
    expect(second.data.pagination).toEqual({ page: 2, per_page: 2, total: 5, total_pages: 3 })
    expect((await api.get("/contact-groups?page=9")).data.groups).toEqual([])
    for (const [query, field] of [["page=0", "page"], ["per_page=101", "per_page"], ["per_page=x", "per_page"]] as const) {
      const result = await api.get(`/contact-groups?${query}`)
      expect(result.status).toBe(400)
      expect(result.errors[0]?.field).toBe(field)
    }
  })
})
