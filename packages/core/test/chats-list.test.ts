import { describe, expect, it } from "@effect/vitest"
import { Effect, Encoding, Layer, TestClock } from "effect"
import {
  type ChatListParams,
  Chats,
  type ChatsService,
  ContactGroups,
  Contacts,
  Core,
  type InvalidInput,
  MemoryStorage,
  type OrganizationId,
  Organizations
} from "@switchboard/core"

const TestLayer = Core.layer.pipe(Layer.provideMerge(MemoryStorage.layer))

const GROUP = "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a"

/** An organization with three chats: messages at 10:00, 11:00 and 12:00 of 2026-03-01 (UTC). */
const setUp = Effect.gen(function* () {
  const org = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" }))
  const chats = yield* Chats
  const people = [
    ["+14155550101", "Ada", "ada@example.com"],
    ["+14155550102", "Grace", "grace@example.com"],
    ["+31612345678", "Élodie", null]
  ] as const
  yield* Effect.flatMap(Contacts, (contacts) =>
    contacts.importBulk(org.id, people.map(([phone, first_name, email]) => ({ phone, first_name, ...(email ? { email } : {}) })))
  )
  const ids = []
  for (const [index, [phone]] of people.entries()) {
    yield* TestClock.setTime(Date.UTC(2026, 2, 1, 10 + index))
    ids.push((yield* chats.receiveInbound(org.id, { phone, type: "text", text: "hi" })).chat.uuid)
  }
  return { orgId: org.id, chats, ids }
})

const listUuids = (chats: ChatsService, orgId: OrganizationId, params: ChatListParams) =>
  Effect.map(chats.list(orgId, params), (list) => list.chats.map((chat) => chat.uuid))

const issuesOf = (error: { readonly _tag: string }) =>
  error._tag === "InvalidInput" ? (error as InvalidInput).issues.map((issue) => [issue.field, issue.code]) : error._tag

describe("Chats.list parameters", () => {
  it.effect("every bad parameter is an issue naming it, all reported at once", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp
      const cases: ReadonlyArray<readonly [ChatListParams, ReadonlyArray<readonly [string, string]>]> = [
        [{ status: "archived" }, [["status", "invalid_format"]]],
        [{ sort_by: "name" }, [["sort_by", "invalid_format"]]],
        [{ sort_order: "up" }, [["sort_order", "invalid_format"]]],
        [{ assigned_to: " " }, [["assigned_to", "invalid_format"]]],
        [{ assigned_to: "x".repeat(256) }, [["assigned_to", "invalid_format"]]],
        [{ group_uuid: "not-a-uuid" }, [["group_uuid", "invalid_format"]]],
        [{ group_uuid: `${GROUP},` }, [["group_uuid", "invalid_format"]]],
        [{ tag_uuid: "" }, [["tag_uuid", "invalid_format"]]],
        [{ tag_uuid: Array.from({ length: 101 }, (_, n) => `0190f6b4-7b7e-7c4e-8a5d-${String(n).padStart(12, "0")}`) }, [["tag_uuid", "out_of_range"]]],
        [{ favorite: "yes" as never }, [["favorite", "invalid_type"]]],
        [{ unread: 1 as never }, [["unread", "invalid_type"]]],
        [{ date_from: "2026-02-30" }, [["date_from", "invalid_format"]]],
        [{ date_from: "yesterday" }, [["date_from", "invalid_format"]]],
        [{ date_to: "2026-03-01T25:00:00Z" }, [["date_to", "invalid_format"]]],
        [{ date_to: "2026-03-01T10:00:00+24:00" }, [["date_to", "invalid_format"]]],
        [{ date_from: "2026-03-02", date_to: "2026-03-01" }, [["date_to", "out_of_range"]]],
        [{ search: "x".repeat(256) }, [["search", "too_long"]]],
        [{ limit: 0 }, [["limit", "out_of_range"]]],
        [{ limit: 101 }, [["limit", "out_of_range"]]],
        [{ limit: 1.5 }, [["limit", "invalid_type"]]],
        [{ pagination: true, page: 0 }, [["page", "out_of_range"]]],
        [{ pagination: true, per_page: 101 }, [["per_page", "out_of_range"]]],
        [{ pagination: "true" as never }, [["pagination", "invalid_type"]]],
        [{ status: "x", sort_by: "y", favorite: "z" as never, limit: 0 }, [["status", "invalid_format"], ["favorite", "invalid_type"], ["sort_by", "invalid_format"], ["limit", "out_of_range"]]]
      ]
      for (const [params, expected] of cases) {
        expect(issuesOf(yield* Effect.flip(chats.list(orgId, params))), JSON.stringify(params)).toEqual(expected)
      }
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a parameter of the other pagination mode is wrong_pagination_mode, naming it", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp
      const cases: ReadonlyArray<readonly [ChatListParams, ReadonlyArray<readonly [string, string]>]> = [
        [{ page: 1 }, [["page", "wrong_pagination_mode"]]],
        [{ per_page: 10, pagination: false }, [["per_page", "wrong_pagination_mode"]]],
        [{ pagination: true, cursor: "abc" }, [["cursor", "wrong_pagination_mode"]]],
        [{ pagination: true, limit: 5, page: 2 }, [["limit", "wrong_pagination_mode"]]]
      ]
      for (const [params, expected] of cases) {
        expect(issuesOf(yield* Effect.flip(chats.list(orgId, params))), JSON.stringify(params)).toEqual(expected)
      }
    }).pipe(Effect.provide(TestLayer)))

  it.effect("defaults: last_message_at desc, cursor mode with limit 20", () =>
    Effect.gen(function* () {
      const { orgId, chats, ids } = yield* setUp
      const list = yield* chats.list(orgId, {})
      expect(list.chats.map((chat) => chat.uuid)).toEqual([...ids].reverse())
      expect(list.pagination).toEqual({ mode: "cursor", limit: 20, next_cursor: null, has_more: false })
      expect(yield* listUuids(chats, orgId, { sort_order: "asc" })).toEqual(ids)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("offset mode: pagination object {mode, page, per_page, total, total_pages}; past the end is empty", () =>
    Effect.gen(function* () {
      const { orgId, chats, ids } = yield* setUp
      const second = yield* chats.list(orgId, { pagination: true, page: 2, per_page: 2 })
      expect(second.chats.map((chat) => chat.uuid)).toEqual([ids[0]])
      expect(second.pagination).toEqual({ mode: "offset", page: 2, per_page: 2, total: 3, total_pages: 2 })
      expect((yield* chats.list(orgId, { pagination: true })).pagination).toEqual({ mode: "offset", page: 1, per_page: 20, total: 3, total_pages: 1 })
      expect((yield* chats.list(orgId, { pagination: true, page: 9, per_page: 2 })).chats).toEqual([])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("cursor mode: next_cursor walks the list; has_more false and next_cursor null on the last page", () =>
    Effect.gen(function* () {
      const { orgId, chats, ids } = yield* setUp
      const first = yield* chats.list(orgId, { limit: 2 })
      expect(first.pagination).toMatchObject({ mode: "cursor", limit: 2, has_more: true })
      const cursor = (first.pagination as { next_cursor: string }).next_cursor
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/)
      const second = yield* chats.list(orgId, { limit: 2, cursor })
      expect([...first.chats, ...second.chats].map((chat) => chat.uuid)).toEqual([...ids].reverse())
      expect(second.pagination).toEqual({ mode: "cursor", limit: 2, next_cursor: null, has_more: false })
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a cursor binds the sort and filters it was made with (and the organization): reused with others → invalid_cursor", () =>
    Effect.gen(function* () {
      const { orgId, chats } = yield* setUp
      const made = { limit: 1, status: "open", search: "a" } as const
      const cursor = ((yield* chats.list(orgId, made)).pagination as { next_cursor: string }).next_cursor
      expect((yield* chats.list(orgId, { ...made, cursor })).chats).toHaveLength(1)
      expect((yield* chats.list(orgId, { ...made, limit: 5, cursor, search: " A " })).chats).toHaveLength(1)
      const other = yield* Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Other" }))
      const misuses: ReadonlyArray<readonly [OrganizationId, ChatListParams]> = [
        [orgId, { ...made, cursor, status: "pending" }],
        [orgId, { ...made, cursor, search: undefined }],
        [orgId, { ...made, cursor, sort_order: "asc" }],
        [orgId, { ...made, cursor, sort_by: "created_at" }],
        [orgId, { ...made, cursor, favorite: false }],
        [other.id, { ...made, cursor }],
        [orgId, { ...made, cursor: "not-a-cursor" }],
        [orgId, { ...made, cursor: "" }],
        [orgId, { ...made, cursor: Encoding.encodeBase64Url(JSON.stringify({ v: 1, b: "x", k: null, u: "y" })) }]
      ]
      for (const [organizationId, params] of misuses) {
        expect(issuesOf(yield* Effect.flip(chats.list(organizationId, params))), JSON.stringify(params)).toEqual([["cursor", "invalid_cursor"]])
      }
    }).pipe(Effect.provide(TestLayer)))

  it.effect("search is trimmed and case-insensitive; a phone-like search matches the phone's digits", () =>
    Effect.gen(function* () {
      const { orgId, chats, ids } = yield* setUp
      const [ada, grace, elodie] = ids
      const cases: ReadonlyArray<readonly [string, ReadonlyArray<string | undefined>]> = [
        ["  ADA ", [ada]],
        ["ÉLODIE", [elodie]],
        ["example.com", [grace, ada]],
        ["+31 6 1234", [elodie]],
        ["(415) 555-0102", [grace]],
        ["415.555", [grace, ada]],
        ["   ", [elodie, grace, ada]],
        ["nobody", []]
      ]
      for (const [search, expected] of cases) expect(yield* listUuids(chats, orgId, { search }), search).toEqual(expected)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("date_from/date_to: ISO dates or date-times, inclusive; a bare date_to includes its whole UTC day", () =>
    Effect.gen(function* () {
      const { orgId, chats, ids } = yield* setUp
      const [at10, at11, at12] = ids
      const cases: ReadonlyArray<readonly [ChatListParams, ReadonlyArray<string | undefined>]> = [
        [{ date_to: "2026-03-01" }, [at12, at11, at10]],
        [{ date_to: "2026-02-28" }, []],
        [{ date_from: "2026-03-01", date_to: "2026-03-01" }, [at12, at11, at10]],
        [{ date_from: "2026-03-02" }, []],
        [{ date_from: "2026-03-01T11:00:00Z" }, [at12, at11]],
        [{ date_to: "2026-03-01T11:00:00.000Z" }, [at11, at10]],
        [{ date_to: "2026-03-01T10:59:59.999Z" }, [at10]],
        [{ date_from: "2026-03-01T12:00:00+01:00", date_to: "2026-03-01T12:30+01:00" }, [at11]],
        [{ date_from: "2026-03-01T06:00:00 05:00", date_to: "2026-03-01T06:00:00-05:00" }, [at11, at10]],
        [{ date_from: "2026-03-01T11:00" }, [at12, at11]]
      ]
      for (const [params, expected] of cases) expect(yield* listUuids(chats, orgId, params), JSON.stringify(params)).toEqual(expected)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("filters combine with AND; group_uuid lists match any and accept upper-case uuids", () =>
    Effect.gen(function* () {
      const { orgId, chats, ids } = yield* setUp
      const [ada, grace] = ids
      const group = yield* Effect.flatMap(ContactGroups, (groups) => groups.create(orgId, "VIP"))
      yield* Effect.flatMap(Contacts, (contacts) => contacts.importBulk(orgId, [{ phone: "+14155550101", first_name: "Ada", group: ["VIP"] }]))
      yield* chats.setFavorite(orgId, grace!, true)
      yield* chats.assign(orgId, ada!, "agent-1")
      expect(yield* listUuids(chats, orgId, { group_uuid: `${GROUP},${group.uuid.toUpperCase()}` })).toEqual([ada])
      expect(yield* listUuids(chats, orgId, { group_uuid: group.uuid, favorite: true })).toEqual([])
      expect(yield* listUuids(chats, orgId, { search: "example", favorite: true })).toEqual([grace])
      expect(yield* listUuids(chats, orgId, { assigned_to: "agent-1", group_uuid: [group.uuid] })).toEqual([ada])
      expect(yield* listUuids(chats, orgId, { assigned_to: "unassigned", search: "example" })).toEqual([grace])
    }).pipe(Effect.provide(TestLayer)))
})
