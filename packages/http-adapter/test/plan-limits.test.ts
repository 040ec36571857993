import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  allContacts,
  contactRows,
  importContacts,
  listen,
  makeHandler,
  makeSharedStorage,
  makeTenant,
  phone,
  updatePlan,
  type ApiClient,
  type ApiResult
} from "./helpers.js"

const storage = makeSharedStorage()
const handler = makeHandler(storage)
let server: Awaited<ReturnType<typeof listen>>
beforeAll(async () => {
  server = await listen(handler)
})
afterAll(async () => {
  await server.close()
  await handler.dispose()
})

const limited = (plan: { contacts_limit?: number | null; label_limit?: number | null }) =>
  makeTenant(storage, handler, { name: "Limited", plan })

const contactTotal = async (api: ApiClient) => (await api.get("/contacts")).data.pagination.total as number
const labelTotal = async (api: ApiClient) => (await api.get("/labels")).data.pagination.total as number

const expectLimitReached = (result: ApiResult, code: string) => {
  expect(result.status).toBe(403)
  expect(result.errors.map((error) => error.code)).toEqual([code])
}

const statusCounts = (results: ReadonlyArray<ApiResult>) =>
  results.reduce<Record<number, number>>((counts, { status }) => ({ ...counts, [status]: (counts[status] ?? 0) + 1 }), {})

describe("contacts_limit (docs/contacts.md 'Plan limits')", () => {
  it("imports exactly up to the limit; one more → 403 contacts_limit_reached stating limit and usage, nothing written", async () => {
    const { api } = await limited({ contacts_limit: 5 })
    await importContacts(api, contactRows(0, 3))
    const over = await api.post("/contacts/bulk", { contacts: contactRows(3, 3) })
    expectLimitReached(over, "contacts_limit_reached")
    expect(over.message).toMatch(/\b5\b/)
    expect(over.message).toMatch(/\b3\b/)
    expect(await contactTotal(api)).toBe(3)
    expect(await importContacts(api, contactRows(3, 2))).toMatchObject({ created: 2 })
    const one = await api.post("/contacts/bulk", { contacts: contactRows(5, 1) })
    expectLimitReached(one, "contacts_limit_reached")
    expect(await contactTotal(api)).toBe(5)
  })

  it("upserting existing phones is free at the limit; duplicate rows of one new phone count once", async () => {
    const { api } = await limited({ contacts_limit: 3 })
    await importContacts(api, contactRows(0, 2))
    expect(await importContacts(api, [...contactRows(0, 2, { city: "Paris" }), { first_name: "New", phone: phone(2) }, { first_name: "Again", phone: phone(2) }])).toMatchObject({
      created: 1,
      updated: 2
    })
    expect(await importContacts(api, contactRows(0, 3, { city: "Rome" }))).toMatchObject({ created: 0, updated: 3 })
    expect((await allContacts(api)).every((contact) => contact.city === "Rome")).toBe(true)
  })

  it("a batch that updates some contacts and creates one too many writes nothing, updates included", async () => {
    const { api } = await limited({ contacts_limit: 2 })
    await importContacts(api, contactRows(0, 2))
    const result = await api.post("/contacts/bulk", {
      contacts: [{ first_name: "Changed", phone: phone(0), group: ["New group"] }, ...contactRows(2, 1)]
    })
    expectLimitReached(result, "contacts_limit_reached")
    expect((await allContacts(api)).map((contact) => contact.first_name).sort()).toEqual(["Person 0", "Person 1"])
    expect((await api.get("/contact-groups")).data.pagination.total).toBe(0)
  })

  it("deleting a contact frees a slot", async () => {
    const { api } = await limited({ contacts_limit: 2 })
    const { contacts } = await importContacts(api, contactRows(0, 2))
    expectLimitReached(await api.post("/contacts/bulk", { contacts: contactRows(2, 1) }), "contacts_limit_reached")
    expect((await api.delete(`/contacts/${contacts[0]?.uuid}`)).status).toBe(200)
    expect(await importContacts(api, contactRows(2, 1))).toMatchObject({ created: 1 })
    expectLimitReached(await api.post("/contacts/bulk", { contacts: contactRows(3, 1) }), "contacts_limit_reached")
  })

  it("a limit of 0 blocks every new contact; null means unlimited", async () => {
    const zero = await limited({ contacts_limit: 0 })
    expectLimitReached(await zero.api.post("/contacts/bulk", { contacts: contactRows(0, 1) }), "contacts_limit_reached")
    const unlimited = await limited({ contacts_limit: null })
    await importContacts(unlimited.api, contactRows(0, 1000))
    await importContacts(unlimited.api, contactRows(1000, 1000))
    expect(await contactTotal(unlimited.api)).toBe(2000)
  })

  it("a lowered limit blocks only new contacts: existing ones stay and can still be updated", async () => {
    const { api, organization } = await limited({ contacts_limit: 10 })
    await importContacts(api, contactRows(0, 4))
    await updatePlan(storage, organization.id, { contacts_limit: 2 })
    expect(await contactTotal(api)).toBe(4)
    expect(await importContacts(api, contactRows(0, 4, { city: "Oslo" }))).toMatchObject({ updated: 4 })
    expectLimitReached(await api.post("/contacts/bulk", { contacts: contactRows(4, 1) }), "contacts_limit_reached")
  })
})

describe("label_limit (docs/contacts.md 'Plan limits')", () => {
  it("403 label_limit_reached at the limit, stating it; nothing created", async () => {
    const { api } = await limited({ label_limit: 2 })
    for (const name of ["A", "B"]) expect((await api.post("/labels", { name })).status).toBe(200)
    const over = await api.post("/labels", { name: "C" })
    expectLimitReached(over, "label_limit_reached")
    expect(over.message).toMatch(/\b2\b/)
    expect(await labelTotal(api)).toBe(2)
  })

  it("deleting a label (alone or in bulk) frees a slot", async () => {
    const { api } = await limited({ label_limit: 2 })
    const a = (await api.post("/labels", { name: "A" })).data
    const b = (await api.post("/labels", { name: "B" })).data
    await api.delete(`/labels/${a.uuid}`)
    expect((await api.post("/labels", { name: "C" })).status).toBe(200)
    expectLimitReached(await api.post("/labels", { name: "D" }), "label_limit_reached")
    await api.post("/labels/bulk-delete", { tag_uuids: [b.uuid] })
    expect((await api.post("/labels", { name: "D" })).status).toBe(200)
  })

  it("a limit of 0 blocks every label; null means unlimited", async () => {
    expectLimitReached(await (await limited({ label_limit: 0 })).api.post("/labels", { name: "A" }), "label_limit_reached")
    const { api } = await limited({ label_limit: null })
    for (let n = 0; n < 30; n++) expect((await api.post("/labels", { name: `L${n}` })).status).toBe(200)
  })
})

describe("plan limits under concurrency (one real node:http server)", () => {
  it("20 parallel imports of 5 new contacts with contacts_limit 50: exactly 10 succeed, the rest 403, never over", async () => {
    const { api, apiKey } = await limited({ contacts_limit: 50 })
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, batch) =>
        server.fetchApi(apiKey, "POST", "/contacts/bulk", { contacts: contactRows(batch * 5, 5) })
      )
    )
    expect(statusCounts(results)).toEqual({ 200: 10, 403: 10 })
    for (const result of results.filter((r) => r.status === 403)) expect(result.errors[0]?.code).toBe("contacts_limit_reached")
    expect(await contactTotal(api)).toBe(50)
  })

  it("10 parallel label creates with label_limit 3: exactly 3 succeed, the rest 403", async () => {
    const { api, apiKey } = await limited({ label_limit: 3 })
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, n) => server.fetchApi(apiKey, "POST", "/labels", { name: `Parallel ${n}` }))
    )
    expect(statusCounts(results)).toEqual({ 200: 3, 403: 7 })
    expect(await labelTotal(api)).toBe(3)
  })

  it("10 parallel creates of the same label or group name: exactly one 200, the others 400 *_name_taken", async () => {
    const { api, apiKey } = await limited({})
    const labels = await Promise.all(
      Array.from({ length: 10 }, (_, n) => server.fetchApi(apiKey, "POST", "/labels", { name: n % 2 === 0 ? "Same" : " same " }))
    )
    expect(statusCounts(labels)).toEqual({ 200: 1, 400: 9 })
    for (const result of labels.filter((r) => r.status === 400)) expect(result.errors[0]?.code).toBe("label_name_taken")
    expect(await labelTotal(api)).toBe(1)
    const groups = await Promise.all(
      Array.from({ length: 10 }, () => server.fetchApi(apiKey, "POST", "/contact-groups", { name: "Same" }))
    )
    expect(statusCounts(groups)).toEqual({ 200: 1, 400: 9 })
    expect((await api.get("/contact-groups")).data.pagination.total).toBe(1)
  })

  it("parallel imports naming the same new group create it once, with every contact in it", async () => {
    const { api, apiKey } = await limited({})
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, batch) =>
        server.fetchApi(apiKey, "POST", "/contacts/bulk", { contacts: contactRows(batch * 2, 2, { group: [batch % 2 === 0 ? "Team" : " TEAM "] }) })
      )
    )
    expect(statusCounts(results)).toEqual({ 200: 10 })
    const groups = (await api.get("/contact-groups")).data.groups
    expect(groups).toHaveLength(1)
    expect(groups[0].contacts_count).toBe(20)
  })

  it("parallel imports of the same new phones create each contact once", async () => {
    const { api, apiKey } = await limited({ contacts_limit: 10 })
    const results = await Promise.all(
      Array.from({ length: 10 }, () => server.fetchApi(apiKey, "POST", "/contacts/bulk", { contacts: contactRows(0, 10) }))
    )
    expect(statusCounts(results)).toEqual({ 200: 10 })
    expect(results.reduce((sum, result) => sum + (result.data.created as number), 0)).toBe(10)
    expect(await contactTotal(api)).toBe(10)
  })
})
