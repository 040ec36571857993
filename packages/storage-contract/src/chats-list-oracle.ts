import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import {
  type Chat,
  type ChatFilters,
  type ChatId,
  type ChatPosition,
  type ChatSort,
  type ContactId,
  type GroupId,
  type LabelId,
  MemoryStorage,
  type OrganizationId,
  Storage,
  type StorageService
} from "@switchboard/core"
import * as fixtures from "./fixtures.js"

/**
 * Options of {@link runChatListOracle}.
 *
 * @category contract
 */
export interface ChatListOracleOptions {
  /** Shown in the test's name, for example `"SQLite"`. */
  readonly name: string
  /** A Layer of a fresh, empty store, built once for the test and released after it. */
  readonly makeLayer: () => Layer.Layer<Storage, unknown>
  /**
   * How many chats the data set holds: more than the adapter's probe window (its first,
   * approximate query) so that both its queries and the switch between them are exercised.
   */
  readonly chats: number
  /** The test's timeout in ms (default 120 000). */
  readonly timeoutMs?: number
}

/**
 * Registers one test that checks an adapter's chat list against the memory store (the
 * oracle): `options.chats` chats with dense, rare and empty filters, every filter and
 * sort of `GET /chats`, cursor and offset pages and their totals must answer exactly as the
 * memory store answers them.
 *
 * @category contract
 * @example
 * import { runChatListOracle } from "@switchboard/storage-contract"
 * import { SqliteStorage } from "@switchboard/storage-sqlite"
 *
 * runChatListOracle({ name: "SQLite", chats: 2600, makeLayer: () => SqliteStorage.layer({ filename: "oracle.db" }) })
 */
export const runChatListOracle = (options: ChatListOracleOptions): void => {
  const CHATS = options.chats
  describe(`${options.name} chat list against the memory store`, () => {
    it.effect(`${CHATS} chats: every filter and sort gives the same pages and totals`, () =>
      Effect.gen(function* () {
        const data = makeDataSet(CHATS)
        const writes = makeChatWrites(data)
        const memory = Layer.succeed(Storage, MemoryStorage.make())
        const adapter = yield* Layer.build(options.makeLayer()).pipe(Effect.map((context) => Layer.succeedContext(context)))
        yield* apply(data, writes).pipe(Effect.provide(memory))
        yield* apply(data, writes).pipe(Effect.provide(adapter))
        let nonEmpty = 0
        for (const filters of filterCases(data)) {
          for (const sort of SORTS) {
            const expected = yield* answers(data.org.id, filters, sort).pipe(Effect.provide(memory))
            const actual = yield* answers(data.org.id, filters, sort).pipe(Effect.provide(adapter))
            expect(actual, `${JSON.stringify(filters)} ${sort.by} ${sort.order}`).toEqual(expected)
            if ((expected.offsetPages[0]?.total ?? 0) > 0) nonEmpty++
          }
        }
        expect(nonEmpty).toBeGreaterThan(100)
      }).pipe(Effect.scoped), options.timeoutMs ?? 120_000)
  })
}

// The data set and the questions (internal).

/** mulberry32: a small seeded PRNG, so the data set is the same on every run. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const NAMES = ["Maria", "Mark", "Omar", "Ada", "Grace", "Élodie", "Li", "Zoë", "Jonas", "Amara"]

/** Builds every write once (fixed uuids), to apply the same to both stores. */
const makeDataSet = (chats: number) => {
  const random = prng(42)
  const org = fixtures.organization()
  const other = fixtures.organization()
  const group = (name: string) => ({ uuid: fixtures.uuid() as GroupId, name, now: fixtures.instant(0) })
  const groups = { dense: group("dense"), mid: group("mid"), rare: group("rare") }
  const label = (name: string) => ({ uuid: fixtures.uuid() as LabelId, name, color: "#808080", now: fixtures.instant(0) })
  const labels = { dense: label("dense"), rare: label("rare") }
  const rows = Array.from({ length: chats }, (_, n) => {
    const first_name = n % 877 === 5 ? "Quintessa" : NAMES[Math.floor(random() * NAMES.length)]!
    const memberOf = [
      ...(random() < 0.6 ? [groups.dense.uuid] : []),
      ...(random() < 0.08 ? [groups.mid.uuid] : []),
      ...(n % 911 === 7 ? [groups.rare.uuid] : [])
    ]
    return fixtures.importRow(fixtures.phone(n), { first_name, email: random() < 0.3 ? `${first_name.toLowerCase()}${n}@mail.test` : null }, memberOf.map(fixtures.groupWithId))
  })
  const request = fixtures.importRequest(rows)
  const contactIds = request.ids.slice(0, rows.length) as Array<ContactId>
  const denseLabel = contactIds.filter(() => random() < 0.4)
  const rareLabel = contactIds.filter((_, n) => n % 997 === 3)
  return { random, org, other, groups, labels, request, contactIds, denseLabel, rareLabel }
}

type DataSet = ReturnType<typeof makeDataSet>

/** The writes after the contacts: messages, chats without messages, and chat updates. */
const makeChatWrites = (data: DataSet) =>
  data.contactIds.map((contactId, n) => {
    const r = data.random
    const minutes = Math.floor(r() * 90)
    const patch = {
      ...(r() < 0.3 ? { status: "pending" as const } : r() < 0.02 ? { status: "closed" as const } : {}),
      ...(r() < 0.5 ? { assigned_to: "u1" } : r() < 0.02 ? { assigned_to: "u2" } : {}),
      ...(r() < 0.01 ? { favorite: true } : {}),
      ...(r() < 0.6 ? { unread_count: 0 } : {})
    }
    return { contactId, n, minutes, withoutMessage: n % 131 === 0, outbound: r() < 0.3, patch, patchAt: Math.floor(r() * 200) }
  })

const apply = (data: DataSet, writes: ReturnType<typeof makeChatWrites>) =>
  Effect.gen(function* () {
    const storage = yield* Storage
    yield* storage.organizations.insert(data.org)
    yield* storage.organizations.insert(data.other)
    for (const group of Object.values(data.groups)) yield* storage.groups.create(data.org.id, group)
    for (const label of Object.values(data.labels)) yield* storage.labels.create(data.org.id, label, null)
    yield* storage.contacts.importBulk(data.org.id, data.request)
    yield* storage.labels.assign(data.org.id, data.labels.dense.uuid, data.denseLabel, fixtures.instant(0))
    yield* storage.labels.assign(data.org.id, data.labels.rare.uuid, data.rareLabel, fixtures.instant(0))
    for (const write of writes) yield* applyChat(storage, data.org.id, write)
    // Noise in another organization: same phones and names, never listed.
    for (let n = 0; n < 50; n++) yield* storage.chats.appendMessage(data.other.id, noise(n))
  })

const applyChat = (storage: StorageService, organizationId: OrganizationId, write: ReturnType<typeof makeChatWrites>[number]) =>
  Effect.gen(function* () {
    const chatId = (`00000000-0000-4000-9000-${String(write.n).padStart(12, "0")}`) as ChatId
    const now = fixtures.instant(write.minutes)
    if (write.withoutMessage) {
      yield* storage.chats.ensure(organizationId, write.contactId, { uuid: chatId, status: "open" }, now)
      return
    }
    const messageId = `00000000-0000-4000-a000-${String(write.n).padStart(12, "0")}`
    yield* storage.chats.appendMessage(organizationId, {
      contact: { _tag: "ById", uuid: write.contactId },
      newChat: { uuid: chatId, status: "open" },
      message: { uuid: messageId as never, direction: write.outbound ? "outbound" : "inbound", type: "text", text: "hi", template: null, media: null, content: null, status: "delivered", provider_message_id: null, failure: null, channel_uuid: null, transport: null, attempts: 0, next_attempt_at: null, broadcast_uuid: null, reply_to: null, reactions: [], created_at: now, updated_at: now },
      unreadIncrement: write.outbound ? 0 : 1,
      reopen: { from: [], to: "open" },
      dedupe: false,
      now
    })
    if (Object.keys(write.patch).length > 0) yield* storage.chats.update(organizationId, chatId, write.patch, fixtures.instant(write.patchAt))
  })

const noise = (n: number) => ({
  contact: { _tag: "ByPhone" as const, phone: fixtures.phone(n), create: { uuid: `00000000-0000-4000-b000-${String(n).padStart(12, "0")}` as ContactId, first_name: "Maria", last_name: null } },
  newChat: { uuid: `00000000-0000-4000-c000-${String(n).padStart(12, "0")}` as ChatId, status: "open" as const },
  message: { uuid: `00000000-0000-4000-d000-${String(n).padStart(12, "0")}` as never, direction: "inbound" as const, type: "text" as const, text: "x", template: null, media: null, content: null, status: "delivered" as const, provider_message_id: null, failure: null, channel_uuid: null, transport: null, attempts: 0, next_attempt_at: null, broadcast_uuid: null, reply_to: null, reactions: [], created_at: fixtures.instant(n), updated_at: fixtures.instant(n) },
  unreadIncrement: 1,
  reopen: { from: [], to: "open" as const },
  dedupe: false,
  now: fixtures.instant(n)
})

const filterCases = (data: DataSet): ReadonlyArray<ChatFilters> => [
  {},
  { status: "pending" },
  { status: "closed" },
  { status: "resolved" },
  { assignedTo: "u1" },
  { assignedTo: "u2" },
  { assignedTo: null },
  { favorite: true },
  { unread: true },
  { lastMessageFrom: fixtures.instant(80) },
  { lastMessageTo: fixtures.instant(3) },
  { lastMessageFrom: fixtures.instant(10), lastMessageTo: fixtures.instant(12) },
  { groupIds: [data.groups.dense.uuid] },
  { groupIds: [data.groups.rare.uuid] },
  { groupIds: [data.groups.rare.uuid, data.groups.mid.uuid] },
  { labelIds: [data.labels.dense.uuid] },
  { labelIds: [data.labels.rare.uuid] },
  { search: "maria" },
  { search: "quint" },
  { search: "ma" },
  { search: "ë" },
  { search: "zz" },
  { search: "4155550" },
  { status: "pending", favorite: true },
  { assignedTo: "u1", unread: true, groupIds: [data.groups.mid.uuid] },
  { search: "omar", labelIds: [data.labels.dense.uuid], lastMessageFrom: fixtures.instant(30) }
]

const SORTS: ReadonlyArray<ChatSort> = (["last_message_at", "created_at", "updated_at"] as const).flatMap((by) =>
  (["desc", "asc"] as const).map((order) => ({ by, order }))
)

/** What one store answers for a filter and sort: three cursor pages and two offset pages. */
const answers = (organizationId: OrganizationId, filters: ChatFilters, sort: ChatSort) =>
  Effect.gen(function* () {
    const { chats } = yield* Storage
    const cursorPages: Array<ReadonlyArray<unknown>> = []
    let after: ChatPosition | null = null
    for (let page = 0; page < 3; page++) {
      const rows: ReadonlyArray<Chat> = yield* chats.listAfter(organizationId, filters, sort, after, 21)
      cursorPages.push(page === 0 ? rows : rows.map((chat) => chat.uuid))
      const last = rows[rows.length - 1]
      if (last === undefined || rows.length < 21) break
      after = { value: last[sort.by], uuid: last.uuid }
    }
    const offsetPages = [
      yield* chats.listPage(organizationId, filters, sort, { page: 1, per_page: 20 }),
      yield* chats.listPage(organizationId, filters, sort, { page: 4, per_page: 20 })
    ].map((page) => ({ uuids: page.items.map((chat) => chat.uuid), total: page.total }))
    return { cursorPages, offsetPages }
  })
