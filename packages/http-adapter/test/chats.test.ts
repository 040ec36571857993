import { afterAll, describe, expect, it } from "vitest"
import { at, listedUuids, receive, withChats } from "./chats-helpers.js"
import { importContacts, makeHandler, makeSharedStorage, makeTenant, phone, request } from "./helpers.js"

const storage = makeSharedStorage()
const handler = makeHandler(storage)
afterAll(() => handler.dispose())

const tenant = () => makeTenant(storage, handler)

const GROUP = "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a"

describe("GET /chats parameters (docs/chats.md)", () => {
  it("every bad parameter → 400 naming it", async () => {
    const { api } = await tenant()
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["status=archived", "status"],
      ["status=", "status"],
      ["status=OPEN", "status"],
      ["assigned_to=", "assigned_to"],
      [`assigned_to=${"x".repeat(256)}`, "assigned_to"],
      ["group_uuid=abc", "group_uuid"],
      [`group_uuid=${GROUP},`, "group_uuid"],
      [`tag_uuid=${GROUP},nope`, "tag_uuid"],
      ["tag_uuid=", "tag_uuid"],
      ["favorite=yes", "favorite"],
      ["favorite=1", "favorite"],
      ["favorite=", "favorite"],
      ["unread=TRUE", "unread"],
      ["date_from=2026-13-01", "date_from"],
      ["date_from=2026-02-29", "date_from"],
      ["date_from=", "date_from"],
      ["date_to=tomorrow", "date_to"],
      ["date_to=2026-03-01T10:61:00Z", "date_to"],
      ["date_from=2026-03-02&date_to=2026-03-01", "date_to"],
      ["sort_by=name", "sort_by"],
      ["sort_by=", "sort_by"],
      ["sort_order=up", "sort_order"],
      ["pagination=1", "pagination"],
      ["pagination=yes", "pagination"],
      ["pagination=true&page=0", "page"],
      ["pagination=true&page=abc", "page"],
      ["pagination=true&page=1.5", "page"],
      ["pagination=true&per_page=0", "per_page"],
      ["pagination=true&per_page=101", "per_page"],
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["limit=abc", "limit"],
      ["limit=2.5", "limit"],
      ["cursor=garbage", "cursor"],
      ["cursor=", "cursor"],
      [`search=${"x".repeat(256)}`, "search"],
      ["page=1", "page"],
      ["per_page=20", "per_page"],
      ["pagination=false&page=2", "page"],
      ["pagination=true&cursor=abc", "cursor"],
      ["pagination=true&limit=5", "limit"]
    ]
    for (const [query, field] of cases) {
      const result = await api.get(`/chats?${query}`)
      expect(result.status, query).toBe(400)
      expect(result.errors.map((error) => error.field), query).toContain(field)
    }
  })

  it("names the codes: invalid_format, invalid_type, out_of_range, wrong_pagination_mode, invalid_cursor", async () => {
    const { api } = await tenant()
    const codes = async (query: string) => (await api.get(`/chats?${query}`)).errors.map(({ code, field }) => ({ code, field }))
    expect(await codes("status=x")).toEqual([{ code: "invalid_format", field: "status" }])
    expect(await codes("limit=abc")).toEqual([{ code: "invalid_type", field: "limit" }])
    expect(await codes("limit=101")).toEqual([{ code: "out_of_range", field: "limit" }])
    expect(await codes("page=2")).toEqual([{ code: "wrong_pagination_mode", field: "page" }])
    expect(await codes("cursor=abc")).toEqual([{ code: "invalid_cursor", field: "cursor" }])
    expect(await codes("group_uuid=1,2")).toEqual([{ code: "invalid_format", field: "group_uuid" }])
  })

  it("answers 401 without a valid key", async () => {
    const missing = await request(handler, { method: "GET", url: "/api/v1/api/chats" })
    expect(missing.statusCode).toBe(401)
    const wrong = await request(handler, { method: "GET", url: "/api/v1/api/chats", headers: { authorization: "Bearer nope" } })
    expect(wrong.statusCode).toBe(401)
  })

  it("accepts every valid parameter at once; unknown parameters are ignored", async () => {
    const { api } = await tenant()
    const query = [
      "search=ada",
      "status=open",
      "assigned_to=unassigned",
      `group_uuid=${GROUP}`,
      `tag_uuid=${GROUP.toUpperCase()}`,
      "favorite=false",
      "unread=true",
      "date_from=2026-01-01",
      "date_to=2026-12-31T23:59:59Z",
      "sort_by=updated_at",
      "sort_order=asc",
      "limit=100",
      "colour=blue"
    ].join("&")
    const result = await api.get(`/chats?${query}`)
    expect(result.status, JSON.stringify(result.errors)).toBe(200)
    expect(result.data).toEqual({ chats: [], pagination: { mode: "cursor", limit: 100, next_cursor: null, has_more: false } })
  })
})

describe("GET /chats records and filters (docs/chats.md)", () => {
  it("a chat record has exactly the fields of docs/chats.md", async () => {
    const { api, organization } = await tenant()
    await importContacts(api, [{ phone: phone(1), first_name: "Ada", last_name: "Lovelace", email: "ada@example.com", group: ["VIP"] }])
    const chat = await receive(storage, organization.id, phone(1), 5, { text: "Hi!" })
    const result = await api.get("/chats")
    expect(result.status).toBe(200)
    expect(result.data.chats).toEqual([
      {
        uuid: chat.uuid,
        contact: { uuid: chat.contact.uuid, first_name: "Ada", last_name: "Lovelace", phone: phone(1) },
        status: "open",
        assigned_to: null,
        groups: [{ uuid: expect.any(String), name: "VIP" }],
        labels: [],
        favorite: false,
        unread: true,
        unread_count: 1,
        last_message_at: at(5),
        last_message: { uuid: expect.any(String), direction: "inbound", type: "text", text: "Hi!", status: "delivered", created_at: at(5) },
        last_inbound_channel_uuid: null,
        window_expires_at: null,
        created_at: at(5),
        updated_at: at(5)
      }
    ])
  })

  it("each filter alone, and together with AND", async () => {
    const { api, organization } = await tenant()
    const label = (await api.post("/labels", { name: "Hot" })).data.uuid as string
    const rows = [
      { phone: phone(1), first_name: "Ada", email: "ada@engine.org", group: ["Team A"] },
      { phone: phone(2), first_name: "Grace", group: ["Team B"] },
      { phone: phone(3), first_name: "Élodie", group: ["Team A", "Team B"] },
      { phone: phone(4), first_name: "Omar" }
    ]
    const imported = await importContacts(api, rows)
    const groups = (await api.get("/contact-groups")).data.groups as Array<{ uuid: string; name: string }>
    const teamA = groups.find((group) => group.name === "Team A")!.uuid
    const teamB = groups.find((group) => group.name === "Team B")!.uuid
    expect((await api.post("/contacts/labels/assign", { tag_uuid: label, contact_uuids: [imported.contacts[1]!.uuid, imported.contacts[3]!.uuid] })).status).toBe(200)
    const [a, g, e, o] = [
      await receive(storage, organization.id, phone(1), 40),
      await receive(storage, organization.id, phone(2), 30),
      await receive(storage, organization.id, phone(3), 20),
      await receive(storage, organization.id, phone(4), 60 * 24 + 10)
    ].map((chat) => chat.uuid)
    await withChats(storage, 100, (chats) => chats.setStatus(organization.id, g as never, "resolved"))
    await withChats(storage, 100, (chats) => chats.assign(organization.id, a as never, "agent-1"))
    await withChats(storage, 100, (chats) => chats.setFavorite(organization.id, e as never, true))
    await withChats(storage, 100, (chats) => chats.markRead(organization.id, o as never))
    const cases: ReadonlyArray<readonly [string, ReadonlyArray<string | undefined>]> = [
      ["", [o, a, g, e]],
      ["status=resolved", [g]],
      ["status=open", [o, a, e]],
      ["assigned_to=agent-1", [a]],
      ["assigned_to=unassigned", [o, g, e]],
      [`group_uuid=${teamA}`, [a, e]],
      [`group_uuid=${teamA},${teamB}`, [a, g, e]],
      [`tag_uuid=${label}`, [o, g]],
      ["favorite=true", [e]],
      ["favorite=false", [o, a, g]],
      ["unread=false", [o]],
      ["unread=true", [a, g, e]],
      ["date_from=2026-03-02", [o]],
      ["date_to=2026-03-01", [a, g, e]],
      [`date_from=${encodeURIComponent(at(30))}&date_to=${encodeURIComponent(at(40))}`, [a, g]],
      ["search=ADA", [a]],
      ["search=engine", [a]],
      ["search=%C3%A9lodie", [e]],
      [`search=${encodeURIComponent(phone(2).slice(0, 8))}`, [o, a, g, e]],
      [`search=${encodeURIComponent(`${phone(3).slice(-4, -2)} ${phone(3).slice(-2)}`)}`, [e]],
      [`group_uuid=${teamB}&tag_uuid=${label}`, [g]],
      [`group_uuid=${teamA}&favorite=false&unread=true`, [a]],
      [`status=open&assigned_to=unassigned&date_to=2026-03-01`, [e]],
      ["search=e&status=open&favorite=true", [e]],
      ["status=closed&favorite=true", []]
    ]
    for (const [query, expected] of cases) expect(await listedUuids(api, query), query).toEqual(expected)
  })

  it("tenant isolation: another organization's chats, groups and cursors are never seen", async () => {
    const mine = await tenant()
    const theirs = await tenant()
    await importContacts(theirs.api, [{ phone: phone(1), first_name: "Ada", group: ["Theirs"] }])
    const theirGroup = ((await theirs.api.get("/contact-groups")).data.groups as Array<{ uuid: string }>)[0]!.uuid
    const theirChat = await receive(storage, theirs.organization.id, phone(1), 1)
    await receive(storage, theirs.organization.id, phone(2), 2)
    const myChat = await receive(storage, mine.organization.id, phone(1), 3, { first_name: "Ada" })
    expect(await listedUuids(mine.api, "")).toEqual([myChat.uuid])
    expect(await listedUuids(mine.api, "search=ada")).toEqual([myChat.uuid])
    expect(await listedUuids(mine.api, `group_uuid=${theirGroup}`)).toEqual([])
    expect((await mine.api.get("/chats?pagination=true")).data.pagination.total).toBe(1)
    const theirCursor = (await theirs.api.get("/chats?limit=1")).data.pagination.next_cursor as string
    const reused = await mine.api.get(`/chats?limit=1&cursor=${theirCursor}`)
    expect([reused.status, reused.errors[0]?.code]).toEqual([400, "invalid_cursor"])
    expect(await listedUuids(theirs.api, "")).toContain(theirChat.uuid)
  })
})
