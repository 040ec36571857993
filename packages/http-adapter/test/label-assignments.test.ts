import { afterAll, describe, expect, it } from "vitest"
import { contactRows, importContacts, makeHandler, makeSharedStorage, makeTenant, UNKNOWN_UUID, type ApiClient } from "./helpers.js"

const storage = makeSharedStorage()
const handler = makeHandler(storage)
afterAll(() => handler.dispose())

const OTHER_UNKNOWN = "0190f6b4-7b7e-7c4e-8a5d-000000000002"

/** A tenant with `labels` labels (L0…) and `contacts` contacts. */
const setUp = async (labels: number, contacts: number) => {
  const { api } = await makeTenant(storage, handler)
  const labelIds: Array<string> = []
  for (let n = 0; n < labels; n++) labelIds.push((await api.post("/labels", { name: `L${n}` })).data.uuid)
  const contactIds = contacts === 0 ? [] : (await importContacts(api, contactRows(0, contacts))).contacts.map((contact) => contact.uuid)
  return { api, labelIds, contactIds }
}

const labelNamesOf = async (api: ApiClient, contactId: string) =>
  ((await api.get(`/contacts/${contactId}/labels`)).data.labels as Array<{ name: string }>).map((label) => label.name)

const labelTotal = async (api: ApiClient) => (await api.get("/labels")).data.pagination.total as number

describe("POST /labels/bulk-delete (docs/contacts.md 'Rules')", () => {
  it("deletes one label given as a single uuid string", async () => {
    const { api, labelIds } = await setUp(2, 0)
    const result = await api.post("/labels/bulk-delete", { tag_uuids: labelIds[0] })
    expect(result.status).toBe(200)
    expect(result.data).toEqual({ deleted: 1, tag_uuids: [labelIds[0]], not_found: [] })
    expect(await labelTotal(api)).toBe(1)
  })

  it("deletes an array, reports unknown uuids in not_found, and is idempotent", async () => {
    const { api, labelIds, contactIds } = await setUp(3, 1)
    await api.post("/contacts/labels/assign", { contact_uuids: contactIds, tag_uuid: labelIds[0] })
    const body = { tag_uuids: [labelIds[0], UNKNOWN_UUID, labelIds[1], labelIds[0]] }
    const first = await api.post("/labels/bulk-delete", body)
    expect(first.status).toBe(200)
    expect(first.data).toEqual({ deleted: 2, tag_uuids: [labelIds[0], labelIds[1]], not_found: [UNKNOWN_UUID] })
    const second = await api.post("/labels/bulk-delete", body)
    expect(second.status).toBe(200)
    expect(second.data).toEqual({ deleted: 0, tag_uuids: [], not_found: [labelIds[0], UNKNOWN_UUID, labelIds[1]] })
    expect(((await api.get("/labels")).data.labels as Array<{ uuid: string }>).map((label) => label.uuid)).toEqual([labelIds[2]])
    expect(await labelNamesOf(api, contactIds[0] as string)).toEqual([])
  })

  it("400 for a malformed uuid anywhere, an empty array, a missing or non-uuid value; nothing deleted", async () => {
    const { api, labelIds } = await setUp(2, 0)
    for (const body of [
      { tag_uuids: [labelIds[0], "not-a-uuid"] },
      { tag_uuids: "not-a-uuid" },
      { tag_uuids: [] },
      {},
      { tag_uuids: 5 },
      { tag_uuids: Array.from({ length: 1001 }, () => labelIds[0]) }
    ]) {
      const result = await api.post("/labels/bulk-delete", body)
      expect(result.status, JSON.stringify(body).slice(0, 80)).toBe(400)
      for (const error of result.errors) expect(error.field ?? "tag_uuids").toMatch(/^tag_uuids/)
    }
    expect(await labelTotal(api)).toBe(2)
  })
})

describe("POST /contacts/labels/assign (docs/contacts.md)", () => {
  it("assigns to one contact given as a single uuid: data {tag_uuid, assigned, contact_uuids}", async () => {
    const { api, labelIds, contactIds } = await setUp(1, 2)
    const result = await api.post("/contacts/labels/assign", { contact_uuids: contactIds[0], tag_uuid: labelIds[0] })
    expect(result.status).toBe(200)
    expect(result.data).toEqual({ tag_uuid: labelIds[0], assigned: 1, contact_uuids: [contactIds[0]] })
    expect(await labelNamesOf(api, contactIds[0] as string)).toEqual(["L0"])
    expect(await labelNamesOf(api, contactIds[1] as string)).toEqual([])
  })

  it("assigns to an array of contacts; a repeated call gives the same result and lists the label once", async () => {
    const { api, labelIds, contactIds } = await setUp(1, 3)
    const body = { contact_uuids: contactIds, tag_uuid: labelIds[0] }
    const first = await api.post("/contacts/labels/assign", body)
    expect(first.data).toEqual({ tag_uuid: labelIds[0], assigned: 3, contact_uuids: contactIds })
    const second = await api.post("/contacts/labels/assign", body)
    expect(second.status).toBe(200)
    expect(second.data).toEqual(first.data)
    for (const contactId of contactIds) {
      expect(await labelNamesOf(api, contactId)).toEqual(["L0"])
      expect((await api.get(`/contacts/${contactId}`)).data.labels).toHaveLength(1)
    }
    expect((await api.get(`/labels/${labelIds[0]}`)).data.contacts_count).toBe(3)
    const duplicated = await api.post("/contacts/labels/assign", { contact_uuids: [contactIds[0], contactIds[0]], tag_uuid: labelIds[0] })
    expect(duplicated.data).toEqual({ tag_uuid: labelIds[0], assigned: 1, contact_uuids: [contactIds[0]] })
  })

  it("404 with one error per unknown contact uuid; the known contacts did not get the label", async () => {
    const { api, labelIds, contactIds } = await setUp(1, 2)
    const result = await api.post("/contacts/labels/assign", {
      contact_uuids: [contactIds[0], UNKNOWN_UUID, contactIds[1], OTHER_UNKNOWN],
      tag_uuid: labelIds[0]
    })
    expect(result.status).toBe(404)
    expect(result.errors).toHaveLength(2)
    for (const error of result.errors) expect(error.code).toBe("not_found")
    const messages = result.errors.map((error) => error.message).join(" ")
    expect(messages).toContain(UNKNOWN_UUID)
    expect(messages).toContain(OTHER_UNKNOWN)
    for (const contactId of contactIds) expect(await labelNamesOf(api, contactId)).toEqual([])
    expect((await api.get(`/labels/${labelIds[0]}`)).data.contacts_count).toBe(0)
  })

  it("404 naming the label when it is unknown, and every missing uuid when both are", async () => {
    const { api, contactIds } = await setUp(0, 1)
    const unknownLabel = await api.post("/contacts/labels/assign", { contact_uuids: contactIds, tag_uuid: UNKNOWN_UUID })
    expect(unknownLabel.status).toBe(404)
    expect(unknownLabel.errors).toEqual([{ code: "not_found", field: "tag_uuid", message: expect.stringContaining(UNKNOWN_UUID) }])
    const both = await api.post("/contacts/labels/assign", { contact_uuids: [OTHER_UNKNOWN], tag_uuid: UNKNOWN_UUID })
    expect(both.status).toBe(404)
    expect(both.errors.map((error) => error.field).sort()).toEqual(["contact_uuids", "tag_uuid"])
    expect(await labelNamesOf(api, contactIds[0] as string)).toEqual([])
  })

  it("reads uuids case-insensitively in assign, bulk-delete, label and group paths", async () => {
    const { api, labelIds, contactIds } = await setUp(2, 1)
    const [label, other] = labelIds as [string, string]
    const contact = contactIds[0] as string
    const assigned = await api.post("/contacts/labels/assign", { contact_uuids: contact.toUpperCase(), tag_uuid: label.toUpperCase() })
    expect(assigned.data).toEqual({ tag_uuid: label, assigned: 1, contact_uuids: [contact] })
    expect((await api.get(`/labels/${label.toUpperCase()}`)).data.uuid).toBe(label)
    const group = (await api.post("/contact-groups", { name: "G" })).data
    expect((await api.put(`/contact-groups/${group.uuid.toUpperCase()}`, { name: "H" })).data.id).toBe(group.uuid)
    expect((await api.post("/labels/bulk-delete", { tag_uuids: [other.toUpperCase()] })).data).toEqual({ deleted: 1, tag_uuids: [other], not_found: [] })
    expect((await api.delete(`/labels/${label.toUpperCase()}`)).data).toEqual({ uuid: label, deleted: true })
    expect(await labelNamesOf(api, contact)).toEqual([])
  })

  it("400 for a malformed uuid, an empty array, more than 1000 uuids or a missing field; nothing changed", async () => {
    const { api, labelIds, contactIds } = await setUp(1, 1)
    const [contact] = contactIds
    for (const body of [
      { contact_uuids: [contact, "nope"], tag_uuid: labelIds[0] },
      { contact_uuids: contact, tag_uuid: "nope" },
      { contact_uuids: [], tag_uuid: labelIds[0] },
      { contact_uuids: Array.from({ length: 1001 }, () => contact), tag_uuid: labelIds[0] },
      { tag_uuid: labelIds[0] },
      { contact_uuids: contact }
    ]) {
      const result = await api.post("/contacts/labels/assign", body)
      expect(result.status, JSON.stringify(body).slice(0, 80)).toBe(400)
    }
    expect(await labelNamesOf(api, contact as string)).toEqual([])
  })
})
