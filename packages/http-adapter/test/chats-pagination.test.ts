import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ContactId, OrganizationId } from "@switchboard/core"
import { listedUuids, receive, walkCursor, withChats } from "./chats-helpers.js"
import { type ApiClient, importContacts, makeHandler, makeSharedStorage, makeTenant, phone } from "./helpers.js"

const storage = makeSharedStorage()
const handler = makeHandler(storage)
afterAll(() => handler.dispose())

const CHATS = 47

/** The whole list in one offset page: the order every other walk must reproduce. */
const fullOrder = (api: ApiClient, query: string) => listedUuids(api, `${query}${query === "" ? "" : "&"}pagination=true&per_page=100`)

describe("GET /chats pagination (docs/chats.md)", () => {
  let api: ApiClient
  let organizationId: OrganizationId
  let all: Array<string>

  beforeAll(async () => {
    const tenant = await makeTenant(storage, handler)
    api = tenant.api
    organizationId = tenant.organization.id
    // Many ties: 47 chats over 4 distinct last_message_at values, created at 4 instants.
    for (let n = 0; n < CHATS; n++) await receive(storage, organizationId, phone(n), n % 4)
    // Chats without messages (last_message_at null), created in the middle.
    const imported = await importContacts(api, [1000, 1001].map((n) => ({ phone: phone(n), first_name: `Quiet ${n}` })))
    for (const contact of imported.contacts) {
      await withChats(storage, 2, (chats) => chats.ensure(organizationId, contact.uuid as ContactId))
    }
    all = await fullOrder(api, "")
    expect(all).toHaveLength(CHATS + 2)
  })

  it("cursor mode walks every page under ties of last_message_at: no chat twice, none missing, the same order", async () => {
    for (const sort of ["", "sort_order=asc", "sort_by=created_at", "sort_by=created_at&sort_order=asc", "sort_by=updated_at"]) {
      const expected = await fullOrder(api, sort)
      expect(new Set(expected).size).toBe(CHATS + 2)
      for (const limit of [1, 6, 20, 100]) {
        const pages = await walkCursor(api, sort, limit)
        const walked = pages.flat()
        expect(walked, `${sort} limit ${limit}`).toEqual(expected)
        expect(pages.slice(0, -1).every((page) => page.length === limit), `${sort} limit ${limit}`).toBe(true)
        expect(pages.length).toBe(Math.max(1, Math.ceil(walked.length / limit)))
      }
    }
  })

  it("chats without messages come last in desc and first in asc", async () => {
    const desc = await fullOrder(api, "")
    const asc = await fullOrder(api, "sort_order=asc")
    const quiet = (await api.get("/chats?search=quiet&pagination=true")).data.chats as Array<{ uuid: string; last_message_at: null }>
    expect(quiet.map((chat) => chat.last_message_at)).toEqual([null, null])
    const quietIds = new Set(quiet.map((chat) => chat.uuid))
    expect(desc.slice(-2).every((uuid) => quietIds.has(uuid))).toBe(true)
    expect(asc.slice(0, 2).every((uuid) => quietIds.has(uuid))).toBe(true)
    expect(asc).toEqual([...desc].reverse())
  })

  it("offset mode: pages of per_page in order, with {mode, page, per_page, total, total_pages}", async () => {
    const pages: Array<string> = []
    for (let page = 1; page <= 5; page++) {
      const result = await api.get(`/chats?pagination=true&page=${page}&per_page=10`)
      expect(result.status).toBe(200)
      expect(result.data.pagination).toEqual({ mode: "offset", page, per_page: 10, total: CHATS + 2, total_pages: 5 })
      pages.push(...(result.data.chats as Array<{ uuid: string }>).map((chat) => chat.uuid))
    }
    expect(pages).toEqual(all)
    const past = await api.get("/chats?pagination=true&page=6&per_page=10")
    expect(past.data).toEqual({ chats: [], pagination: { mode: "offset", page: 6, per_page: 10, total: CHATS + 2, total_pages: 5 } })
    const defaults = await api.get("/chats?pagination=true")
    expect(defaults.data.pagination).toEqual({ mode: "offset", page: 1, per_page: 20, total: CHATS + 2, total_pages: 3 })
    expect((await api.get("/chats?pagination=false")).data.pagination).toMatchObject({ mode: "cursor", limit: 20, has_more: true })
  })

  it("a cursor binds the sort and filters it was made with: reused with others → 400 invalid_cursor; the limit may change", async () => {
    const first = await api.get("/chats?limit=5&sort_by=created_at&unread=true")
    const cursor = first.data.pagination.next_cursor as string
    expect(typeof cursor).toBe("string")
    const next = await api.get(`/chats?limit=9&sort_by=created_at&unread=true&cursor=${cursor}`)
    expect(next.status).toBe(200)
    for (const query of ["limit=5&unread=true", "limit=5&sort_by=created_at", "limit=5&sort_by=created_at&unread=true&sort_order=asc", "limit=5&sort_by=created_at&unread=true&search=x"]) {
      const reused = await api.get(`/chats?${query}&cursor=${cursor}`)
      expect(reused.status, query).toBe(400)
      expect(reused.errors.map(({ code, field }) => ({ code, field })), query).toEqual([{ code: "invalid_cursor", field: "cursor" }])
    }
    const tampered = await api.get(`/chats?limit=5&sort_by=created_at&unread=true&cursor=${cursor.slice(0, -3)}`)
    expect([tampered.status, tampered.errors[0]?.code]).toEqual([400, "invalid_cursor"])
  })

  it("a cursor walk is not disturbed by a chat arriving meanwhile at the top of the list", async () => {
    const tenant = await makeTenant(storage, handler)
    for (let n = 0; n < 10; n++) await receive(storage, tenant.organization.id, phone(n), n % 2)
    const before = await fullOrder(tenant.api, "")
    const first = await tenant.api.get("/chats?limit=4")
    await receive(storage, tenant.organization.id, phone(99), 60)
    const seen = [...(first.data.chats as Array<{ uuid: string }>).map((chat) => chat.uuid)]
    let cursor = first.data.pagination.next_cursor as string | null
    while (cursor !== null) {
      const page = await tenant.api.get(`/chats?limit=4&cursor=${cursor}`)
      seen.push(...(page.data.chats as Array<{ uuid: string }>).map((chat) => chat.uuid))
      cursor = page.data.pagination.next_cursor
    }
    expect(seen).toEqual(before)
  })
})
