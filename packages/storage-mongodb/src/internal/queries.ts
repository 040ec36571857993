import type { Document } from "mongodb"
import {
  CONTACT_DETAIL_FIELDS,
  type ChatAppendRequest,
  type ChatFilters,
  type ChatPatch,
  type ChatPosition,
  type ChatSort,
  type ContactDetails,
  listedMessageType,
  type PageRequest,
  type RateLimitIncrement
} from "@switchboard/core"
import { CHAT_FILTER_FIELDS, CHAT_SORT_FIELDS, HAS_CHAT, HAS_FETCH_JOB, IS_RECIPIENT } from "./schema.js"

// Pure builders of every filter, update, pipeline and option document the repositories
// send, so tests can check them without a server (issue 6). The rules against operator
// injection (issue 6, item 3) are applied here, once:
// - a value from a request is only ever compared with `$eq` (or listed in `$in` after
//   keeping strings only), so an object such as `{ "$gt": "" }` is a literal value to
//   compare, never an operator;
// - in aggregation pipelines (pipeline updates) every value is wrapped in `$literal`, so a
//   string such as `"$name"` is never read as a field path;
// - field names come from fixed tables (`CONTACT_DETAIL_FIELDS`, `CHAT_SORT_FIELDS`,
//   `CHAT_FILTER_FIELDS`), never from a request; unknown keys of a patch are dropped;
// - search is an escaped regular expression; `$where`, `$expr` over user input and raw
//   user regexes are never used.

/** `{ $eq: value }`: compares `value` literally, whatever its shape. */
export const eq = <A>(value: A): { readonly $eq: A } => ({ $eq: value })

/** `{ $literal: value }`: `value` as a constant inside an aggregation expression. */
export const literal = <A>(value: A): { readonly $literal: A } => ({ $literal: value })

/** Only the strings of `values`, without repeats (for `$in`). */
export const strings = (values: ReadonlyArray<unknown>): Array<string> => [
  ...new Set(values.filter((value): value is string => typeof value === "string"))
]

/** `{ $in: strings(values) }`. */
export const anyOf = (values: ReadonlyArray<unknown>): { readonly $in: Array<string> } => ({ $in: strings(values) })

/** `text` with every regular-expression metacharacter escaped: matches itself, literally. */
export const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&")

/** The document with this `_id`. */
export const byId = (id: string): Document => ({ _id: eq(id) })

/** The documents of one organization. */
export const ofOrganization = (organizationId: string): Document => ({ organization_id: eq(organizationId) })

/** The document with this `_id`, if it belongs to the organization. */
export const owned = (organizationId: string, id: string): Document => ({ _id: eq(id), organization_id: eq(organizationId) })

/** The documents of the organization among `ids`. */
export const ownedAmong = (organizationId: string, ids: ReadonlyArray<unknown>): Document => ({
  organization_id: eq(organizationId),
  _id: anyOf(ids)
})

/** The lists' order (docs/http-api.md "Pagination"): `created_at desc, uuid desc`. */
export const NEWEST_FIRST = { created_at: -1, _id: -1 } as const

/** `find` options of one offset page, newest first. */
export const pageOptions = (page: PageRequest): { readonly sort: typeof NEWEST_FIRST; readonly skip: number; readonly limit: number } => ({
  sort: NEWEST_FIRST,
  skip: (page.page - 1) * page.per_page,
  limit: page.per_page
})

/** The documents of the organization whose `field` (`name_key`, `trigger_key`) is one of `keys`. */
export const byKeys = (organizationId: string, field: "name_key" | "trigger_key", keys: ReadonlyArray<unknown>): Document => ({
  organization_id: eq(organizationId),
  [field]: anyOf(keys)
})

// ---------------------------------------------------------------------------------------
// Contacts

/** The contact of the organization with this E.164 phone. */
export const contactByPhone = (organizationId: string, phone: string): Document => ({
  organization_id: eq(organizationId),
  phone: eq(phone)
})

/** The contacts of the organization with any of these phones. */
export const contactsByPhones = (organizationId: string, phones: ReadonlyArray<unknown>): Document => ({
  organization_id: eq(organizationId),
  phone: anyOf(phones)
})

/** The fields of a contact record (the rest of the document stays in the store). */
export const CONTACT_PROJECTION = { chat: 0, search_text: 0, organization_id: 0 } as const

/** The details of `details` whose keys are contact details; any other key is dropped. */
export const knownDetails = (details: Partial<ContactDetails>): Partial<ContactDetails> => {
  const known: Record<string, unknown> = {}
  for (const field of CONTACT_DETAIL_FIELDS) {
    if (Object.prototype.hasOwnProperty.call(details, field) && details[field] !== undefined) known[field] = details[field]
  }
  return known as Partial<ContactDetails>
}

/**
 * The aggregation expression of core's `chatSearchText` over a contact document: first
 * name, last name, full name, email and the phone's digits (E.164 is `+` and digits), one
 * per line.
 */
export const SEARCH_TEXT_EXPRESSION: Document = {
  $concat: [
    { $ifNull: ["$first_name", ""] },
    "\n",
    { $ifNull: ["$last_name", ""] },
    "\n",
    { $trim: { input: { $concat: [{ $ifNull: ["$first_name", ""] }, " ", { $ifNull: ["$last_name", ""] }] } } },
    "\n",
    { $ifNull: ["$email", ""] },
    "\n",
    { $replaceAll: { input: "$phone", find: "+", replacement: "" } }
  ]
}

/**
 * The pipeline update of a contact: sets `fields` (known details, `phone`, `updated_at`;
 * each a `$literal`; `marketing_opt_out_at` cleared when the patch has it `null`), adds
 * `addGroupIds` to its groups, then recomputes `search_text` from the stored result, all
 * in one atomic document update.
 */
export const contactUpdatePipeline = (
  patch: { readonly phone?: string; readonly details: Partial<ContactDetails>; readonly marketing_opt_out_at?: null },
  now: string,
  addGroupIds: ReadonlyArray<unknown> = []
): Array<Document> => {
  const set: Record<string, unknown> = {}
  for (const [field, value] of Object.entries(knownDetails(patch.details))) set[field] = literal(value)
  if (patch.phone !== undefined) {
    set.phone = literal(patch.phone)
    set.phone_valid = literal(true) // a phone set by an update was validated
  }
  if (patch.marketing_opt_out_at === null) set.marketing_opt_out_at = literal(null)
  set.updated_at = literal(now)
  const groups = strings(addGroupIds)
  if (groups.length > 0) set.group_ids = { $setUnion: [{ $ifNull: ["$group_ids", []] }, literal(groups)] }
  return [{ $set: set }, { $set: { search_text: SEARCH_TEXT_EXPRESSION } }]
}

// ---------------------------------------------------------------------------------------
// Chats

/** The contact of the organization whose chat has this uuid. */
export const chatById = (organizationId: string, chatId: string): Document => ({
  organization_id: eq(organizationId),
  "chat.uuid": eq(chatId)
})

/** The query of the chat list: the filter and the sort, both keyset- and index-friendly. */
export interface ChatListQuery {
  readonly filter: Document
  readonly sort: Document
}

/**
 * The query of `listAfter` / `listPage` (docs/chats.md "`GET /chats`"): the organization's
 * contacts with a chat, every filter given (AND; lists match any), in `sort` order with the
 * chat uuid as tie-break, strictly after `after` when given (keyset: `value < v OR (value
 * = v AND uuid < u)` descending, `>` ascending). A missing `last_message_at` is `""` in the
 * store, below every timestamp, as core orders it. The equality fields come first so the
 * query runs on the index `chats_by_<filter>` or `chats_by_<sort key>` (schema.ts).
 */
export const chatListQuery = (
  organizationId: string,
  filters: ChatFilters,
  sort: ChatSort,
  after: ChatPosition | null
): ChatListQuery => {
  const field = CHAT_SORT_FIELDS[sort.by]
  const direction = sort.order === "asc" ? 1 : -1
  const filter: Record<string, unknown> = { organization_id: eq(organizationId), ...HAS_CHAT }
  Object.assign(filter, chatFilterConditions(filters))
  if (after !== null) {
    const op = sort.order === "asc" ? "$gt" : "$lt"
    const value = after.value ?? ""
    filter.$or = [{ [field]: { [op]: value } }, { [field]: eq(value), "chat.uuid": { [op]: after.uuid } }]
  }
  return { filter, sort: { [field]: direction, "chat.uuid": direction } }
}

/** The conditions of `filters` alone (no organization, no keyset), by field. */
export const chatFilterConditions = (filters: ChatFilters): Record<string, unknown> => {
  const conditions: Record<string, unknown> = {}
  if (filters.status !== undefined) conditions[CHAT_FILTER_FIELDS.status] = eq(filters.status)
  if (filters.assignedTo !== undefined) conditions[CHAT_FILTER_FIELDS.assignedTo] = eq(filters.assignedTo)
  if (filters.favorite !== undefined) conditions[CHAT_FILTER_FIELDS.favorite] = eq(filters.favorite)
  if (filters.unread !== undefined) conditions[CHAT_FILTER_FIELDS.unread] = eq(filters.unread)
  if (filters.groupIds !== undefined) conditions[CHAT_FILTER_FIELDS.groupIds] = anyOf(filters.groupIds)
  if (filters.labelIds !== undefined) conditions[CHAT_FILTER_FIELDS.labelIds] = anyOf(filters.labelIds)
  if (filters.lastMessageFrom !== undefined || filters.lastMessageTo !== undefined) {
    const range: Record<string, string> = {}
    if (filters.lastMessageFrom !== undefined) range.$gte = String(filters.lastMessageFrom)
    else range.$gt = "" // a chat without messages matches no bound
    if (filters.lastMessageTo !== undefined) range.$lte = String(filters.lastMessageTo)
    conditions[CHAT_SORT_FIELDS.last_message_at] = range
  }
  if (filters.search !== undefined) {
    conditions.search_text = { $regex: escapeRegExp(String(filters.search)), $options: "i" }
  }
  return conditions
}

/**
 * The pipeline update `appendMessage` applies to the chat after inserting the message, in
 * one atomic document update (every expression of a stage reads the document as it was):
 * `unread_count + unreadIncrement`, the status reopened when it is one of `reopen.from`,
 * the message made the last one unless the chat has a newer one, `updated_at = now` (a
 * reaction row moves neither); then
 * `unread` from the new count.
 */
export const chatTouchPipeline = (request: ChatAppendRequest): Array<Document> => {
  const { message } = request
  // A reaction row is no message of its own: it moves neither the last message nor updated_at.
  const listed = listedMessageType(message.type)
  const newer = listed ? { $gte: [literal(message.created_at), "$chat.last_message_at"] } : literal(false)
  return [
    {
      $set: {
        "chat.unread_count": { $add: ["$chat.unread_count", literal(request.unreadIncrement)] },
        "chat.status": { $cond: [{ $in: ["$chat.status", literal([...request.reopen.from])] }, literal(request.reopen.to), "$chat.status"] },
        "chat.last_message_uuid": { $cond: [newer, literal(message.uuid), "$chat.last_message_uuid"] },
        "chat.last_message_at": { $cond: [newer, literal(message.created_at), "$chat.last_message_at"] },
        "chat.updated_at": listed ? literal(request.now) : "$chat.updated_at"
      }
    },
    { $set: { "chat.unread": { $gt: ["$chat.unread_count", 0] } } },
    ...windowStages(request)
  ]
}

/**
 * The customer service window's part of {@link chatTouchPipeline} (docs/messaging.md "The
 * customer service window"): for an inbound message through a channel with `inboundAt`,
 * the contact's `last_inbound_at.<channel>` moves forward to it, and the chat's
 * `last_inbound_at`/`last_inbound_channel_uuid` follow when it is the latest over every
 * channel. Nothing otherwise.
 */
const windowStages = (request: ChatAppendRequest): Array<Document> => {
  const { inboundAt, message } = request
  if (inboundAt === undefined || message.direction !== "inbound" || message.channel_uuid === null) return []
  const latest = { $gte: [literal(inboundAt), { $ifNull: ["$chat.last_inbound_at", ""] }] }
  return [
    {
      $set: {
        [`last_inbound_at.${message.channel_uuid}`]: { $max: [{ $ifNull: [`$last_inbound_at.${message.channel_uuid}`, ""] }, literal(inboundAt)] },
        "chat.last_inbound_channel_uuid": { $cond: [latest, literal(message.channel_uuid), { $ifNull: ["$chat.last_inbound_channel_uuid", null] }] },
        "chat.last_inbound_at": { $cond: [latest, literal(inboundAt), { $ifNull: ["$chat.last_inbound_at", null] }] }
      }
    }
  ]
}

// ---------------------------------------------------------------------------------------
// Plan-limit usage

/** The counters of `usage.ts`. */
export type UsageField = "contacts" | "labels" | "channels" | "media_bytes"

/**
 * The filter of a reservation of `amount` slots of `field`: the organization's usage
 * document, only while `count + amount <= limit` (`null`: no condition). Applied with
 * {@link usageIncrement}, it is the conditional `$inc` of docs/storage.md "Plan limits without transactions".
 */
export const usageReservation = (organizationId: string, field: UsageField, amount: number, limit: number | null): Document =>
  limit === null ? byId(organizationId) : { _id: eq(organizationId), [field]: { $lte: limit - amount } }

/** Adds `amount` (negative to release) to `field` and stamps `touched_at` with the server's time. */
export const usageIncrement = (field: UsageField, amount: number): Document => ({
  $inc: { [field]: amount },
  $currentDate: { touched_at: true }
})

/**
 * The compare-and-set of the start-up reconciliation: the usage document as it was read
 * (`contacts`, `labels`, `channels`, `media_bytes`), untouched for `quietMs` by the
 * server's clock.
 */
export const usageReconcileFilter = (
  organizationId: string,
  seen: {
    readonly contacts: number
    readonly labels: number
    readonly channels?: number | undefined
    readonly media_bytes?: number | undefined
  },
  quietMs: number
): Document => ({
  _id: eq(organizationId),
  contacts: eq(seen.contacts),
  labels: eq(seen.labels),
  channels: seen.channels === undefined ? { $exists: false } : eq(seen.channels),
  media_bytes: seen.media_bytes === undefined ? { $exists: false } : eq(seen.media_bytes),
  $expr: { $lt: ["$touched_at", { $subtract: ["$$NOW", quietMs] }] }
})

/**
 * The pipeline summing the `size` of the organization's `stored` media (its stored bytes,
 * the `media_bytes` counter's real value): one row `{ _id: null, bytes }`, none without
 * any.
 */
export const storedBytesPipeline = (organizationId: string): Array<Document> => [
  { $match: { organization_id: eq(organizationId), status: eq("stored") } },
  { $group: { _id: null, bytes: { $sum: "$size" } } }
]

// ---------------------------------------------------------------------------------------
// Rate limits

/** The `_id` of the bucket of one key and window. */
export const rateBucketId = (request: RateLimitIncrement): string => `${request.windowStart}:${request.key}`

/**
 * The one `findOneAndUpdate` of an increment: `$inc` the bucket's count, creating it at 1
 * with `expires_at` (for the TTL index) when missing, and answer the document after.
 */
export const rateBucketIncrement = (request: RateLimitIncrement) =>
  ({
    filter: { _id: eq(rateBucketId(request)) },
    update: { $inc: { count: 1 }, $setOnInsert: { expires_at: new Date(request.expiresAt) } },
    options: { upsert: true, returnDocument: "after", projection: { count: 1 } }
  }) as const

// ---------------------------------------------------------------------------------------
// Chat and message updates (compare-and-set)

/**
 * The compare-and-set of `chats.update`: given the chat as read and the patch, whether
 * anything changes, and if so the filter (the chat still as read) and the `$set` of the
 * fields that differ, `unread` and `updated_at`. `assigned_to` is a request value: in a
 * plain `$set` a value is stored as given, never interpreted.
 */
export const chatPatchUpdate = (
  organizationId: string,
  current: { readonly uuid: string; readonly status: string; readonly assigned_to: string | null; readonly favorite: boolean; readonly unread_count: number },
  patch: ChatPatch,
  now: string
): { readonly changed: false } | { readonly changed: true; readonly filter: Document; readonly update: Document } => {
  const next = {
    status: patch.status ?? current.status,
    assigned_to: patch.assigned_to === undefined ? current.assigned_to : patch.assigned_to,
    favorite: patch.favorite ?? current.favorite,
    unread_count: patch.unread_count ?? current.unread_count
  }
  const keys = ["status", "assigned_to", "favorite", "unread_count"] as const
  if (keys.every((key) => next[key] === current[key])) return { changed: false }
  const filter: Record<string, unknown> = chatById(organizationId, current.uuid)
  const set: Record<string, unknown> = {}
  for (const key of keys) {
    filter[`chat.${key}`] = eq(current[key])
    if (next[key] !== current[key]) set[`chat.${key}`] = next[key]
  }
  set["chat.unread"] = next.unread_count > 0
  set["chat.updated_at"] = now
  return { changed: true, filter, update: { $set: set } }
}

/**
 * The pipeline update `importChats` applies to an existing chat: the attributes given
 * (`$literal`), the newest added message made the last one unless the chat has a newer
 * one, `updated_at = now`, then `unread` from the count.
 */
export const chatImportPipeline = (
  attributes: ChatPatch,
  last: { readonly uuid: string; readonly created_at: string } | null,
  now: string
): Array<Document> => {
  const set: Record<string, unknown> = {}
  for (const key of ["status", "assigned_to", "favorite", "unread_count"] as const) {
    if (attributes[key] !== undefined) set[`chat.${key}`] = literal(attributes[key])
  }
  if (last !== null) {
    const newer = { $gte: [literal(last.created_at), "$chat.last_message_at"] }
    set["chat.last_message_uuid"] = { $cond: [newer, literal(last.uuid), "$chat.last_message_uuid"] }
    set["chat.last_message_at"] = { $cond: [newer, literal(last.created_at), "$chat.last_message_at"] }
  }
  set["chat.updated_at"] = literal(now)
  return [{ $set: set }, { $set: { "chat.unread": { $gt: ["$chat.unread_count", 0] } } }]
}

// ---------------------------------------------------------------------------------------
// Broadcasts

/**
 * The recipients of the organization's broadcast `broadcastId` (messages with that
 * `broadcast_uuid`), with the condition of {@link IS_RECIPIENT} so the planner may use the
 * partial indexes `messages_by_broadcast_contact` and `messages_by_broadcast_status`.
 */
export const recipientsOf = (organizationId: string, broadcastId: string): Document => ({
  organization_id: eq(organizationId),
  broadcast_uuid: { ...IS_RECIPIENT.broadcast_uuid, $eq: broadcastId }
})

/**
 * The pipeline counting the recipients of the organization's broadcasts `broadcastIds` by
 * the status of their messages, on `messages_by_broadcast_status`: one row
 * `{ _id: { broadcast, status }, count }` per broadcast and status present.
 */
export const recipientCountsPipeline = (organizationId: string, broadcastIds: ReadonlyArray<string>): Array<Document> => [
  { $match: { organization_id: eq(organizationId), broadcast_uuid: { ...IS_RECIPIENT.broadcast_uuid, ...anyOf(broadcastIds) } } },
  { $group: { _id: { broadcast: "$broadcast_uuid", status: "$status" }, count: { $sum: 1 } } }
]

/**
 * The filter of a broadcast's audience (docs/broadcasts.md "The audience"): the
 * organization's contacts in a group of `group_uuids`, carrying a label of `label_uuids`
 * or listed in `contact_uuids` (one `$or` branch per non-empty list, each on its index:
 * `contacts_audience_by_group`, `contacts_audience_by_label`, `_id`), with a uuid greater
 * than `after` when given (the keyset of contact-uuid order). `null` when every list is
 * empty: no contact is in the audience.
 */
export const audienceFilter = (
  organizationId: string,
  audience: { readonly group_uuids: ReadonlyArray<unknown>; readonly label_uuids: ReadonlyArray<unknown>; readonly contact_uuids: ReadonlyArray<unknown> },
  after: string | null
): Document | null => {
  const branches: Array<Document> = []
  if (strings(audience.group_uuids).length > 0) branches.push({ group_ids: anyOf(audience.group_uuids) })
  if (strings(audience.label_uuids).length > 0) branches.push({ label_ids: anyOf(audience.label_uuids) })
  if (strings(audience.contact_uuids).length > 0) branches.push({ _id: anyOf(audience.contact_uuids) })
  if (branches.length === 0) return null
  return { organization_id: eq(organizationId), $or: branches, ...(after === null ? {} : { _id: { $gt: String(after) } }) }
}

/**
 * The filter of `claimStart` at `now` (epoch ms), a broadcast of any organization whose
 * start is due: `scheduled` with `send_at <= now` (on `broadcasts_scheduled_by_send_at`),
 * or `sending` with its start unfinished and its start lease free or ended (on
 * `broadcasts_by_start`; `$eq: null` also matches an absent lease).
 */
export const dueStartFilter = (now: number): Document => ({
  $or: [
    { status: eq("scheduled"), send_at: { $lte: new Date(now).toISOString() } },
    { status: eq("sending"), start_finished: eq(false), $or: [{ start_lease_until: eq(null) }, { start_lease_until: { $lte: now } }] }
  ]
})

/**
 * The two reads of `nextStartDueAt`: the branches of {@link dueStartFilter} without their
 * time bound, each read first in the order of its index (`limit: 1`). `scheduled`: the
 * earliest `send_at` (only strings: what `$lte` on an ISO 8601 text matches), on
 * `broadcasts_scheduled_by_send_at`; `resumable`: the earliest `start_lease_until` of an
 * unfinished `sending` start, on `broadcasts_by_start` (null and absent sort first: a free
 * lease, due at once).
 */
export const NEXT_START_READS: {
  readonly [branch in "scheduled" | "resumable"]: {
    readonly filter: Document
    readonly sort: { readonly [field: string]: 1 }
    readonly projection: Document
  }
} = {
  scheduled: {
    filter: { status: eq("scheduled"), send_at: { $type: "string" } },
    sort: { send_at: 1 },
    projection: { _id: 0, send_at: 1 }
  },
  resumable: {
    filter: { status: eq("sending"), start_finished: eq(false) },
    sort: { start_lease_until: 1 },
    projection: { _id: 0, start_lease_until: 1 }
  }
}

/**
 * The pipeline update of `claimStart` (after {@link dueStartFilter}, one atomic document
 * update): `sending`, `started_at` = `now` (ISO 8601) unless it has one already (a resumed
 * start keeps its first), and the start leased under `lease` until `leaseUntil` (epoch ms).
 */
export const claimStartPipeline = (now: number, lease: string, leaseUntil: number): Array<Document> => [
  {
    $set: {
      status: literal("sending"),
      started_at: { $ifNull: ["$started_at", literal(new Date(now).toISOString())] },
      start_lease: literal(lease),
      start_lease_until: literal(leaseUntil)
    }
  }
]

// ---------------------------------------------------------------------------------------
// Media

/**
 * The filter of one page of the organization's media (`media.list`), on
 * `media_by_created_at`: `source` and `status` when given, strictly after the media
 * `after` (as read: its `created_at` and uuid) in newest-first order (`created_at < c OR
 * (created_at = c AND _id < u)`), sorted by {@link NEWEST_FIRST}.
 */
export const mediaPageFilter = (
  organizationId: string,
  filter: { readonly source?: string | undefined; readonly status?: string | undefined },
  after: { readonly _id: string; readonly created_at: string } | null
): Document => ({
  organization_id: eq(organizationId),
  ...(filter.source === undefined ? {} : { source: eq(filter.source) }),
  ...(filter.status === undefined ? {} : { status: eq(filter.status) }),
  ...(after === null
    ? {}
    : { $or: [{ created_at: { $lt: after.created_at } }, { created_at: eq(after.created_at), _id: { $lt: after._id } }] })
})

/** The claim order of fetch jobs: earliest due first, then uuid (the `media_fetch_due` index). */
export const FETCH_ORDER = { next_fetch_at: 1, _id: 1 } as const

/**
 * The filter of `claimFetches` at `now`: a fetch job due (`next_fetch_at <= now`) that is
 * not leased or whose lease ended before `now` (`$eq: null` also matches an absent lease),
 * on `media_fetch_due`.
 */
export const dueFetchFilter = (now: string): Document => ({
  next_fetch_at: { ...HAS_FETCH_JOB.next_fetch_at, $lte: String(now) },
  $or: [{ lease_until: eq(null) }, { lease_until: { $lt: String(now) } }]
})

/** What a media holds once its fetch job ended: no next attempt, no lease. */
export const FETCH_ENDED = { next_fetch_at: null, lease: null, lease_until: null } as const
