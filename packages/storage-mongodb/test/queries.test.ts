import { describe, expect, it } from "@effect/vitest"
import { Query } from "mingo"
import type { ChatFilters, ChatSort, ContactDetails, GroupId, LabelId } from "@switchboard/core"
import {
  anyOf,
  audienceFilter,
  chatFilterConditions,
  chatListQuery,
  chatPatchUpdate,
  chatTouchPipeline,
  contactByPhone,
  contactUpdatePipeline,
  dueStartFilter,
  escapeRegExp,
  knownDetails,
  NEWEST_FIRST,
  NEXT_START_READS,
  ofOrganization,
  rateBucketIncrement,
  recipientsOf,
  usageReservation
} from "../src/internal/queries.js"
import { CHAT_FILTER_FIELDS, CHAT_SORT_FIELDS, HAS_CHAT, INDEXES, IS_RECIPIENT, RATE_BUCKET_INDEXES } from "../src/internal/schema.js"

// The documents the adapter sends, built by pure functions (src/internal/queries.ts) and
// checked here without a server: filters, updates, the index each query is meant to run
// on, and operator-injection payloads neutralised (issue 6, items 3 and 4).

const ORG = "0190f0e0-0000-7000-8000-000000000001"
const GROUP = "0190f0e0-0000-7000-8000-0000000000a1" as GroupId
const LABEL = "0190f0e0-0000-7000-8000-0000000000b1" as LabelId
const DEFAULT_SORT: ChatSort = { by: "last_message_at", order: "desc" }

/** Whether mingo (MongoDB's query language in JavaScript) says `filter` matches `document`. */
const matches = (filter: object, document: object): boolean => new Query(filter as never).test(document as never)

describe("operator injection", () => {
  it("compares a request value with $eq, so an operator object as a phone is a literal that matches nothing", () => {
    const payload = { $gt: "" } as unknown as string
    const filter = contactByPhone(ORG, payload)
    expect(filter).toEqual({ organization_id: { $eq: ORG }, phone: { $eq: { $gt: "" } } })
    const stored = { organization_id: ORG, phone: "+14155550100" }
    expect(matches(filter, stored)).toBe(false)
    // Without $eq the same payload would match every contact: the reason for the rule.
    expect(matches({ organization_id: ORG, phone: { $gt: "" } }, stored)).toBe(true)
  })

  it("keeps only strings in $in lists: objects and operators in a uuid list are dropped", () => {
    expect(anyOf([GROUP, { $ne: null }, "$where", GROUP, 7])).toEqual({ $in: [GROUP, "$where"] })
  })

  it("wraps every value of a pipeline update in $literal, so a string starting with $ is never a field path", () => {
    const [set] = contactUpdatePipeline({ phone: "+14155550100", details: { first_name: "$phone", last_name: "$$ROOT" } }, "2026-01-01T00:00:00.000Z")
    expect(set).toEqual({
      $set: {
        first_name: { $literal: "$phone" },
        last_name: { $literal: "$$ROOT" },
        phone: { $literal: "+14155550100" },
        phone_valid: { $literal: true },
        updated_at: { $literal: "2026-01-01T00:00:00.000Z" }
      }
    })
  })

  it("drops keys that are not contact details: dotted paths and operators never reach an update", () => {
    const details = { first_name: "Ada", "chat.status": "closed", $where: "sleep(1000)", "group_ids.0": "x", __proto__: null } as unknown as Partial<ContactDetails>
    expect(knownDetails(details)).toEqual({ first_name: "Ada" })
    const [set] = contactUpdatePipeline({ details }, "2026-01-01T00:00:00.000Z")
    expect(Object.keys((set as { $set: object }).$set)).toEqual(["first_name", "updated_at"])
  })

  it("escapes every regular-expression metacharacter of a search term: it matches itself only", () => {
    const term = "a.c*+?^${}()|[]\\/-"
    const escaped = escapeRegExp(term)
    expect(new RegExp(escaped).test(term)).toBe(true)
    expect(new RegExp(escapeRegExp("a.c")).test("abc")).toBe(false)
    expect(new RegExp(escapeRegExp(".*")).test("anything")).toBe(false)
    expect(chatFilterConditions({ search: "(a|b)" })).toEqual({ search_text: { $regex: "\\(a\\|b\\)", $options: "i" } })
    expect(matches(chatFilterConditions({ search: "a|b" }), { search_text: "b" })).toBe(false)
    expect(matches(chatFilterConditions({ search: "a|b" }), { search_text: "x a|b y" })).toBe(true)
  })

  it("never builds $where, and never a field name from a value", () => {
    const filters: ChatFilters = {
      search: "$where",
      status: "open",
      assignedTo: "$gt",
      groupIds: [GROUP],
      labelIds: [LABEL],
      favorite: true,
      unread: false,
      lastMessageFrom: "2026-01-01T00:00:00.000Z",
      lastMessageTo: "2026-02-01T00:00:00.000Z"
    }
    const { filter } = chatListQuery(ORG, filters, DEFAULT_SORT, { value: "$ne", uuid: "$gt" as never })
    const text = JSON.stringify(filter)
    expect(text).not.toContain('"$where":')
    const fields = new Set(Object.keys(filter))
    const allowed = new Set(["organization_id", "chat.uuid", "search_text", "$or", ...Object.values(CHAT_FILTER_FIELDS), ...Object.values(CHAT_SORT_FIELDS)])
    for (const field of fields) expect(allowed.has(field), field).toBe(true)
    expect(filter["chat.assigned_to"]).toEqual({ $eq: "$gt" })
  })

  it("chats.update stores assigned_to with a plain $set (values stored as given) and compares the read values with $eq", () => {
    const current = { uuid: "c1", status: "open", assigned_to: null, favorite: false, unread_count: 2 }
    const write = chatPatchUpdate(ORG, current, { assigned_to: "$where", unread_count: 0 }, "2026-01-01T00:00:00.000Z")
    expect(write).toEqual({
      changed: true,
      filter: {
        organization_id: { $eq: ORG },
        "chat.uuid": { $eq: "c1" },
        "chat.status": { $eq: "open" },
        "chat.assigned_to": { $eq: null },
        "chat.favorite": { $eq: false },
        "chat.unread_count": { $eq: 2 }
      },
      update: {
        $set: { "chat.assigned_to": "$where", "chat.unread_count": 0, "chat.unread": false, "chat.updated_at": "2026-01-01T00:00:00.000Z" }
      }
    })
    expect(chatPatchUpdate(ORG, current, { status: "open", favorite: false }, "x")).toEqual({ changed: false })
  })
})

describe("chat list queries", () => {
  it("builds every filter on its field, ANDed, lists as $in", () => {
    const { filter, sort } = chatListQuery(
      ORG,
      { status: "pending", assignedTo: null, groupIds: [GROUP], labelIds: [LABEL], favorite: true, unread: true, lastMessageTo: "2026-02-01T00:00:00.000Z" },
      DEFAULT_SORT,
      null
    )
    expect(filter).toEqual({
      organization_id: { $eq: ORG },
      "chat.uuid": { $exists: true },
      "chat.status": { $eq: "pending" },
      "chat.assigned_to": { $eq: null },
      "chat.favorite": { $eq: true },
      "chat.unread": { $eq: true },
      group_ids: { $in: [GROUP] },
      label_ids: { $in: [LABEL] },
      "chat.last_message_at": { $gt: "", $lte: "2026-02-01T00:00:00.000Z" }
    })
    expect(sort).toEqual({ "chat.last_message_at": -1, "chat.uuid": -1 })
  })

  it("a date bound leaves out chats without messages (stored as \"\")", () => {
    const to = chatFilterConditions({ lastMessageTo: "2026-02-01T00:00:00.000Z" })
    expect(matches(to, { chat: { last_message_at: "" } })).toBe(false)
    expect(matches(to, { chat: { last_message_at: "2026-01-15T00:00:00.000Z" } })).toBe(true)
    const from = chatFilterConditions({ lastMessageFrom: "2026-01-01T00:00:00.000Z" })
    expect(from).toEqual({ "chat.last_message_at": { $gte: "2026-01-01T00:00:00.000Z" } })
    expect(matches(from, { chat: { last_message_at: "" } })).toBe(false)
  })

  it("keyset: strictly after the position, in the sort's direction, with the uuid as tie-break", () => {
    const desc = chatListQuery(ORG, {}, DEFAULT_SORT, { value: "2026-01-02T00:00:00.000Z", uuid: "m" as never })
    expect(desc.filter.$or).toEqual([
      { "chat.last_message_at": { $lt: "2026-01-02T00:00:00.000Z" } },
      { "chat.last_message_at": { $eq: "2026-01-02T00:00:00.000Z" }, "chat.uuid": { $lt: "m" } }
    ])
    const asc = chatListQuery(ORG, {}, { by: "created_at", order: "asc" }, { value: "2026-01-02T00:00:00.000Z", uuid: "m" as never })
    expect(asc.filter.$or).toEqual([
      { "chat.created_at": { $gt: "2026-01-02T00:00:00.000Z" } },
      { "chat.created_at": { $eq: "2026-01-02T00:00:00.000Z" }, "chat.uuid": { $gt: "m" } }
    ])
    expect(asc.sort).toEqual({ "chat.created_at": 1, "chat.uuid": 1 })
    // A chat without messages has the position value null: stored and compared as "".
    const afterEmpty = chatListQuery(ORG, {}, { by: "last_message_at", order: "asc" }, { value: null, uuid: "m" as never })
    const doc = (at: string, uuid: string) => ({ organization_id: ORG, chat: { uuid, last_message_at: at } })
    expect(matches(afterEmpty.filter, doc("", "n"))).toBe(true)
    expect(matches(afterEmpty.filter, doc("", "a"))).toBe(false)
    expect(matches(afterEmpty.filter, doc("2026-01-01T00:00:00.000Z", "a"))).toBe(true)
  })
})

/** The keys of the index named `name` on contacts, in order. */
const contactIndexKeys = (name: string) => Object.keys(INDEXES.contacts.find((index) => index.name === name)?.key ?? {})

/**
 * The index a query is meant to use by the equality–sort rule: the organization, then the
 * one equality filter given (if any), then the sort fields. `undefined` when none fits.
 */
const indexFor = (filter: Record<string, unknown>, sort: Record<string, unknown>) => {
  const equality = Object.keys(filter).filter((field) => field !== "organization_id" && field !== "chat.uuid" && !field.startsWith("$"))
  const wanted = ["organization_id", ...equality, ...Object.keys(sort)]
  return INDEXES.contacts.find((index) => {
    const keys = Object.keys(index.key)
    return keys.length === wanted.length && keys.every((key, i) => key === wanted[i])
  })
}

describe("indexes used", () => {
  const singleFilters: ReadonlyArray<readonly [string, ChatFilters]> = [
    ["status", { status: "open" }],
    ["assignedTo", { assignedTo: "u1" }],
    ["favorite", { favorite: true }],
    ["unread", { unread: true }],
    ["groupIds", { groupIds: [GROUP] }],
    ["labelIds", { labelIds: [LABEL] }]
  ]

  it("every single chat filter with the default sort has an index: organization, the filter's field, last_message_at, uuid", () => {
    for (const [name, filters] of singleFilters) {
      const query = chatListQuery(ORG, filters, DEFAULT_SORT, null)
      const index = indexFor(query.filter, query.sort)
      expect(index?.name, name).toBe(`chats_by_${name}`)
      expect(contactIndexKeys(`chats_by_${name}`)).toEqual([
        "organization_id",
        CHAT_FILTER_FIELDS[name as keyof typeof CHAT_FILTER_FIELDS],
        "chat.last_message_at",
        "chat.uuid"
      ])
      // A partial index serves only queries that imply its filter: every chat query carries it.
      expect(index?.partialFilterExpression).toEqual(HAS_CHAT)
      expect(query.filter["chat.uuid"]).toEqual(HAS_CHAT["chat.uuid"])
    }
  })

  it("every sort key without filters has an index, so keyset pages cost the same at any depth", () => {
    for (const by of ["last_message_at", "created_at", "updated_at"] as const) {
      for (const order of ["asc", "desc"] as const) {
        const query = chatListQuery(ORG, {}, { by, order }, { value: "2026-01-01T00:00:00.000Z", uuid: "u" as never })
        expect(indexFor(query.filter, query.sort)?.name, `${by} ${order}`).toBe(`chats_by_${by}`)
      }
    }
  })

  it("the date range and search filters run on the sort index (range and regex after the sort keys)", () => {
    const query = chatListQuery(ORG, { lastMessageFrom: "2026-01-01T00:00:00.000Z" }, DEFAULT_SORT, null)
    expect(Object.keys(query.filter)).toContain("chat.last_message_at")
    expect(contactIndexKeys("chats_by_last_message_at")).toEqual(["organization_id", "chat.last_message_at", "chat.uuid"])
  })

  it("the newest-first lists run on (organization_id, created_at desc, _id desc) indexes", () => {
    expect(NEWEST_FIRST).toEqual({ created_at: -1, _id: -1 })
    expect(Object.keys(ofOrganization(ORG))).toEqual(["organization_id"])
    for (const collection of ["contacts", "groups", "labels", "templates", "basicReplies", "broadcasts"] as const) {
      expect(INDEXES[collection].some((index) => JSON.stringify(index.key) === JSON.stringify({ organization_id: 1, ...NEWEST_FIRST })), collection).toBe(true)
    }
  })

  it("declares the uniqueness rules as unique indexes", () => {
    const unique = (collection: keyof typeof INDEXES) => INDEXES[collection].filter((i) => i.unique).map((i) => i.key)
    expect(unique("contacts")).toEqual([{ organization_id: 1, phone: 1 }, { "chat.uuid": 1 }])
    expect(unique("groups")).toEqual([{ organization_id: 1, name_key: 1 }])
    expect(unique("labels")).toEqual([{ organization_id: 1, name_key: 1 }])
    expect(unique("templates")).toEqual([{ organization_id: 1, name_key: 1, language: 1, waba_id: 1 }])
    expect(unique("basicReplies")).toEqual([{ organization_id: 1, trigger_key: 1 }])
    expect(unique("apiKeys")).toEqual([{ hash: 1 }])
    expect(unique("messages")).toEqual([
      { organization_id: 1, dedupe_key: 1 },
      { organization_id: 1, broadcast_uuid: 1, contact_uuid: 1 }
    ])
  })
})

describe("broadcast queries", () => {
  const BROADCAST = "0190f0e0-0000-7000-8000-0000000000c1"
  const CONTACT = "0190f0e0-0000-7000-8000-0000000000d1"

  it("the audience: one $or branch per list, strings only (operators in a uuid list are dropped), keyset after a uuid; nothing named → null", () => {
    const filter = audienceFilter(ORG, { group_uuids: [GROUP, { $ne: null }], label_uuids: [], contact_uuids: [CONTACT] }, null)
    expect(filter).toEqual({ organization_id: { $eq: ORG }, $or: [{ group_ids: { $in: [GROUP] } }, { _id: { $in: [CONTACT] } }] })
    expect(audienceFilter(ORG, { group_uuids: [], label_uuids: [], contact_uuids: [] }, null)).toBeNull()
    expect(audienceFilter(ORG, { group_uuids: [{ $gt: "" }], label_uuids: [7], contact_uuids: [] }, null)).toBeNull()
    const member = { _id: CONTACT, organization_id: ORG, group_ids: [], label_ids: [LABEL] }
    const byLabel = audienceFilter(ORG, { group_uuids: [], label_uuids: [LABEL], contact_uuids: [] }, null)!
    expect(matches(byLabel, member)).toBe(true)
    expect(matches(audienceFilter(ORG, { group_uuids: [], label_uuids: [LABEL], contact_uuids: [] }, CONTACT)!, member)).toBe(false)
    expect(matches(byLabel, { ...member, organization_id: "other" })).toBe(false)
  })

  it("a recipient query carries the partial indexes' condition: a message without a broadcast (null or absent) is never one", () => {
    const filter = recipientsOf(ORG, BROADCAST)
    expect(filter).toEqual({ organization_id: { $eq: ORG }, broadcast_uuid: { $type: "string", $eq: BROADCAST } })
    for (const name of ["messages_by_broadcast_contact", "messages_by_broadcast_status"]) {
      expect(INDEXES.messages.find((index) => index.name === name)?.partialFilterExpression).toEqual(IS_RECIPIENT)
    }
    expect(matches(filter, { organization_id: ORG, broadcast_uuid: BROADCAST })).toBe(true)
    expect(matches(IS_RECIPIENT, { organization_id: ORG, broadcast_uuid: null })).toBe(false)
    expect(matches(IS_RECIPIENT, { organization_id: ORG })).toBe(false)
  })

  it("a due start: scheduled once send_at has come; sending, unfinished, its lease free (null or absent) or ended", () => {
    const now = Date.parse("2026-02-01T00:00:00.000Z")
    const filter = dueStartFilter(now)
    const scheduled = { status: "scheduled", start_finished: false, start_lease_until: null }
    expect(matches(filter, { ...scheduled, send_at: "2026-02-01T00:00:00.000Z" })).toBe(true)
    expect(matches(filter, { ...scheduled, send_at: "2026-02-01T00:00:00.001Z" })).toBe(false)
    const sending = { status: "sending", send_at: null, start_finished: false }
    expect(matches(filter, { ...sending, start_lease_until: null })).toBe(true)
    expect(matches(filter, sending)).toBe(true)
    expect(matches(filter, { ...sending, start_lease_until: now })).toBe(true)
    expect(matches(filter, { ...sending, start_lease_until: now + 1 })).toBe(false)
    expect(matches(filter, { ...sending, start_lease_until: null, start_finished: true })).toBe(false)
    for (const status of ["completed", "cancelled", "stopped"]) expect(matches(filter, { ...sending, status, start_lease_until: null })).toBe(false)
  })

  it("the next due start: each read is a branch of the due-start filter without its time bound, sorted on the branch's index", () => {
    const { scheduled, resumable } = NEXT_START_READS
    const late = Date.parse("2100-01-01T00:00:00.000Z")
    const documents = [
      { status: "scheduled", send_at: "2026-02-01T00:00:00.000Z", start_finished: false, start_lease_until: null },
      { status: "scheduled", send_at: null, start_finished: false, start_lease_until: null },
      { status: "sending", send_at: null, start_finished: false, start_lease_until: null },
      { status: "sending", send_at: null, start_finished: false },
      { status: "sending", send_at: null, start_finished: false, start_lease_until: 5 },
      { status: "sending", send_at: null, start_finished: true, start_lease_until: null },
      ...["completed", "cancelled", "stopped"].map((status) => ({ status, send_at: "2026-02-01T00:00:00.000Z", start_finished: false, start_lease_until: null }))
    ]
    // What either read finds is what the claim finds once its time has come, and nothing else.
    for (const document of documents) {
      expect(matches(scheduled.filter, document) || matches(resumable.filter, document)).toBe(matches(dueStartFilter(late), document))
    }
    const keysOf = (name: string) => Object.keys(INDEXES.broadcasts.find((index) => index.name === name)!.key)
    expect(keysOf("broadcasts_scheduled_by_send_at")).toEqual(["status", ...Object.keys(scheduled.sort)])
    expect(keysOf("broadcasts_by_start")).toEqual(["status", "start_finished", ...Object.keys(resumable.sort)])
  })
})

describe("plan-limit and rate-limit documents", () => {
  it("a reservation is a conditional $inc: the usage document only while count + n <= limit", () => {
    expect(usageReservation(ORG, "contacts", 3, 10)).toEqual({ _id: { $eq: ORG }, contacts: { $lte: 7 } })
    expect(usageReservation(ORG, "labels", 1, null)).toEqual({ _id: { $eq: ORG } })
    expect(matches(usageReservation(ORG, "contacts", 3, 10), { _id: ORG, contacts: 7 })).toBe(true)
    expect(matches(usageReservation(ORG, "contacts", 3, 10), { _id: ORG, contacts: 8 })).toBe(false)
  })

  it("a rate-limit increment is one findOneAndUpdate: $inc with upsert, expiry set on insert, the count after", () => {
    const request = { key: "general:org:x", windowStart: 1_800_000, expiresAt: 5_400_000, now: 1_800_500 }
    expect(rateBucketIncrement(request)).toEqual({
      filter: { _id: { $eq: "1800000:general:org:x" } },
      update: { $inc: { count: 1 }, $setOnInsert: { expires_at: new Date(5_400_000) } },
      options: { upsert: true, returnDocument: "after", projection: { count: 1 } }
    })
    expect(RATE_BUCKET_INDEXES).toEqual([{ name: "rate_buckets_expiry", key: { expires_at: 1 }, expireAfterSeconds: 0 }])
  })

  it("appendMessage's chat update reads the chat as it was: reopen only from the listed statuses, last message only when newer", () => {
    const pipeline = chatTouchPipeline({
      contact: { _tag: "ById", uuid: "c" as never },
      newChat: { uuid: "n" as never, status: "open" },
      message: { uuid: "m2" as never, direction: "inbound", type: "text", text: "hi", template: null, media: null, content: null, status: "delivered", provider_message_id: null, failure: null, channel_uuid: null, transport: null, attempts: 0, next_attempt_at: null, broadcast_uuid: null, reply_to: null, reactions: [], created_at: "2026-01-02T00:00:00.000Z", updated_at: "2026-01-02T00:00:00.000Z" },
      unreadIncrement: 1,
      reopen: { from: ["resolved", "closed"], to: "open" },
      dedupe: false,
      now: "2026-01-03T00:00:00.000Z"
    })
    expect(pipeline).toHaveLength(2)
    expect(JSON.stringify(pipeline)).toContain('{"$literal":["resolved","closed"]}')
    expect(pipeline[1]).toEqual({ $set: { "chat.unread": { $gt: ["$chat.unread_count", 0] } } })
  })
})
