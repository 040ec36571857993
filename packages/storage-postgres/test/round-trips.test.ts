import { expect, it } from "@effect/vitest"
import Pg from "pg"
import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, vi } from "vitest"
import {
  type BasicReplyId,
  type ChatId,
  MESSAGE_STATUS_PREDECESSORS,
  type MessageId,
  type MessageStatus,
  type OrganizationId,
  type StorageService
} from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { PostgresStorage } from "@switchboard/storage-postgres"
import {
  eventStatuses as eventStatusesOf,
  inboundText,
  leasedMessages,
  providerReport,
  queuedOnChannels,
  sentMessages,
  subscribedEndpoint
} from "./provider-reports.js"
import { organizationLockHolder, postgresUrl, recordingClient, skipWithoutPostgres, testSchemas } from "./support.js"

const { instant } = fixtures

// The round trips of Meta's webhooks on the store. A provider's status report
// (repositories/providerStatus.ts) and an inbound message of a sender with a chat
// (repositories/chatAppend.ts `appendInboundAlone`) are, with no event to write, ONE
// autocommit statement each (no BEGIN/COMMIT); with an endpoint subscribed they run in a
// transaction that writes the events with them. Every statement the store sends goes
// through a pg Client that records its text.
const schemas = testSchemas()
const schema = schemas.fresh()

/** A node of a PostgreSQL plan (`EXPLAIN (ANALYZE, FORMAT JSON)`), the fields read here. */
interface PlanNode {
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly "Index Cond"?: string
  readonly "Actual Rows": number
  readonly "Rows Removed by Filter"?: number
  readonly "Actual Loops": number
  readonly Plans?: ReadonlyArray<PlanNode>
}

/** A plan's nodes, itself first. */
const nodesOf = (node: PlanNode): Array<PlanNode> => [node, ...(node.Plans ?? []).flatMap(nodesOf)]

/** The rows a plan read from messages: each scan's rows (kept and filtered out) times its loops. */
const rowsRead = (node: PlanNode): number =>
  (node["Relation Name"] === "messages" || node["Index Name"]?.startsWith("messages_")
    ? (node["Actual Rows"] + (node["Rows Removed by Filter"] ?? 0)) * node["Actual Loops"]
    : 0) + (node.Plans ?? []).reduce((sum, child) => sum + rowsRead(child), 0)

/** The text of every statement sent through {@link pool}, in order. */
const statements: Array<string> = []


let pool: Pg.Pool | undefined

/** A store on the file's schema (emptied first) over the recording pool; released with the test's scope. */
const recordedStore = Effect.gen(function* () {
  yield* Effect.promise(() => schemas.empty(schema))
  pool ??= new Pg.Pool({ connectionString: postgresUrl!, max: 2, Client: recordingClient(statements) })
  return yield* PostgresStorage.make({ pool, schema })
})

/** An organization (no endpoint) with one outbound message sent as `wamid.0` at `instant(1)`. */
const sentMessage = (store: StorageService) =>
  Effect.map(sentMessages(store, 1, { subscribed: false }), ({ org, ids }) => ({ org, id: ids[0]! }))

/** The provider's report of `status` for `wamid.0` at `now`, and the statements it sent. */
const report = (store: StorageService, org: OrganizationId, status: MessageStatus, now: string) =>
  Effect.suspend(() => {
    statements.length = 0
    return Effect.map(providerReport(store, org, "wamid.0", status, now), (outcome) => ({ outcome, sent: statements.splice(0) }))
  })

/** The statuses of the `message.status_updated` events of message `id` after its send. */
const eventStatuses = (id: MessageId) => eventStatusesOf(schemas.pool(), schema, id)

const isBegin = (text: string) => /^\s*BEGIN/i.test(text)

describe.skipIf(skipWithoutPostgres)("PostgreSQL server at POSTGRES_URL: round trips of Meta's webhooks", () => {
  beforeAll(() => Effect.runPromise(Effect.scoped(PostgresStorage.make({ connectionString: postgresUrl!, schema }))))
  afterAll(async () => {
    await pool?.end()
    await schemas.drop()
  })

  it.effect("the credential look-ups of one event-loop turn are one statement", () =>
    Effect.gen(function* () {
      const store = yield* recordedStore
      const org = fixtures.organization()
      const keys = [fixtures.apiKey(org.id), fixtures.apiKey(org.id), fixtures.apiKey(org.id)]
      yield* store.organizations.insert(org)
      for (const key of keys) yield* store.organizations.insertApiKey(key)
      statements.length = 0
      const found = yield* Effect.all(
        [...keys.map((key) => key.hash), "d".repeat(64)].map((hash) => store.organizations.findCredentialByHash(hash)),
        { concurrency: "unbounded" }
      )
      expect(found.map((credential) => Option.map(credential, (each) => each.api_key.id))).toEqual([
        ...keys.map((key) => Option.some(key.id)),
        Option.none()
      ])
      expect(statements.filter((text) => text.includes("api_keys"))).toHaveLength(1)
    }).pipe(Effect.scoped))

  it.effect("a chat-list page read in sort order from one index is one statement and no transaction; one with a probe is a snapshot", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        const org = fixtures.organization()
        yield* store.organizations.insert(org)
        const rows = Array.from({ length: 6 }, (_, n) => fixtures.importRow(fixtures.phone(n), { first_name: `Chat${n}` }))
        const imported = yield* store.contacts.importBulk(org.id, fixtures.importRequest(rows))
        if (imported._tag !== "Imported") return expect.fail(`expected Imported, got ${imported._tag}`)
        const entries = imported.result.contacts.map((contact, n) => ({
          contactId: contact.uuid,
          chatId: fixtures.uuid() as ChatId,
          created_at: instant(0),
          attributes: { status: n % 2 === 0 ? ("open" as const) : ("pending" as const) },
          messages: []
        }))
        yield* store.chats.importChats(org.id, { chats: entries, now: instant(1) })
        const sort = { by: "last_message_at", order: "desc" } as const
        statements.length = 0
        const open = yield* store.chats.listAfter(org.id, { status: "open" }, sort, null, 10)
        // No message: every last_message_at ties, so the page is in uuid order, newest first.
        const expected = entries.filter((_, n) => n % 2 === 0).map((entry) => entry.chatId).sort().reverse()
        expect(open.map((chat) => chat.uuid)).toEqual(expected)
        expect(open.map((chat) => chat.contact.first_name)).toEqual(expected.map((id) => `Chat${entries.findIndex((entry) => entry.chatId === id)}`))
        expect(statements).toHaveLength(1)
        // A search reads a probe, then perhaps the exact query: both in one snapshot.
        statements.length = 0
        const found = yield* store.chats.listAfter(org.id, { search: "chat3" }, sort, null, 10)
        expect(found.map((chat) => chat.uuid)).toEqual([entries[3]!.chatId])
        expect(statements.filter(isBegin)).toHaveLength(1)
      })
    ))

  it.effect("with no subscribed endpoint, a report is one statement and no transaction", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        const { org, id } = yield* sentMessage(store)
        const delivered = yield* report(store, org, "delivered", instant(2))
        expect(delivered.outcome).toMatchObject({ _tag: "Updated", changed: true, message: { uuid: id, status: "delivered" } })
        expect(delivered.sent).toHaveLength(1)
        expect(delivered.sent.filter(isBegin)).toEqual([])
        // A refused move (never back) is one statement too, and changes nothing.
        const late = yield* report(store, org, "sent", instant(3))
        expect(late.outcome).toMatchObject({ _tag: "Updated", changed: false, message: { status: "delivered" } })
        expect(late.sent).toHaveLength(1)
        const read = yield* report(store, org, "read", instant(4))
        expect(read.outcome).toMatchObject({ _tag: "Updated", changed: true, message: { status: "read" } })
        expect(read.sent).toHaveLength(1)
        expect(yield* eventStatuses(id)).toEqual([])
      })
    ))

  it.effect("the send queue's outcomes recorded together share one transaction, each under its own lease", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        const { org, ids } = yield* leasedMessages(store, 3, "lease-1")
        statements.length = 0
        const outcomes = yield* Effect.all(
          ids.map((id, index) =>
            store.outbox.record(id, index === 1 ? "another-lease" : "lease-1", { _tag: "Sent", provider_message_id: `wamid.${index}`, attempts: 1 }, instant(1))
          ),
          { concurrency: "unbounded" }
        )
        // The message whose lease the record does not hold is left as it was; the others are sent.
        expect(outcomes.map((outcome) => Option.map(outcome, (message) => message.status))).toEqual([
          Option.some("sent"),
          Option.none(),
          Option.some("sent")
        ])
        expect(statements.filter(isBegin)).toHaveLength(1)
        expect(statements.filter((text) => text === "COMMIT")).toHaveLength(1)
        const second = yield* store.chats.findMessage(org, ids[1]!)
        expect(Option.map(second, (message) => message.status)).toEqual(Option.some("sending"))
      })
    ))

  it.effect("the Sent outcomes of a group are recorded in a fixed number of statements, however many they are", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        // The statements of one group of `count` Sent outcomes (the group's transaction and the read before it).
        const groupOf = (count: number) =>
          Effect.gen(function* () {
            const { ids } = yield* leasedMessages(store, count, "lease-1")
            statements.length = 0
            const outcomes = yield* Effect.all(
              ids.map((id, index) => store.outbox.record(id, "lease-1", { _tag: "Sent", provider_message_id: `wamid.${count}.${index}`, attempts: 1 }, instant(1))),
              { concurrency: "unbounded" }
            )
            expect(outcomes.every((outcome) => Option.isSome(outcome) && outcome.value.status === "sent")).toBe(true)
            return statements.splice(0)
          })
        const two = yield* groupOf(2)
        const twelve = yield* groupOf(12)
        expect(two.filter(isBegin)).toHaveLength(1)
        expect(twelve.filter(isBegin)).toHaveLength(1)
        expect(twelve).toHaveLength(two.length)
      })
    ))

  it.effect("recordSent outcomes of a group are one statement with no message row read, however many they are; a lease not held answers None", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        // The statements of one group of `count` lean records, the second under another lease.
        const groupOf = (count: number) =>
          Effect.gen(function* () {
            const { org, ids } = yield* leasedMessages(store, count, "lease-1")
            statements.length = 0
            const answers = yield* Effect.promise(() =>
              Promise.all(ids.map((id, index) =>
                store.outbox.recordSent!(id, index === 1 ? "another-lease" : "lease-1", { _tag: "Sent", provider_message_id: `wamid.lean.${count}.${index}`, attempts: 1 }, instant(1)))))
            expect(answers).toEqual(ids.map((_, index) => (index === 1 ? Option.none() : Option.some("sent"))))
            const sent = statements.splice(0)
            const stored = yield* store.chats.findMessage(org, ids[0]!)
            expect(Option.map(stored, (message) => [message.status, message.provider_message_id, message.attempts])).toEqual(Option.some(["sent", `wamid.lean.${count}.0`, 1]))
            expect(Option.map(yield* store.chats.findMessage(org, ids[1]!), (message) => message.status)).toEqual(Option.some("sending"))
            return sent
          })
        const three = yield* groupOf(3)
        const twelve = yield* groupOf(12)
        // Four round trips: BEGIN, the owners read under the organization's lock, the write, COMMIT.
        expect(three).toHaveLength(4)
        expect(isBegin(three[0]!)).toBe(true)
        expect(three[1]).toMatch(/FOR NO KEY UPDATE/)
        expect(three[2]).toMatch(/UPDATE\s+\S+messages/i)
        expect(three[3]).toBe("COMMIT")
        expect(twelve).toHaveLength(three.length)
        // No statement reads a message's columns (the whole row): the write returns uuids only.
        expect(twelve.filter((text) => /uuid,\s*chat_uuid,\s*contact_uuid/i.test(text))).toEqual([])
        expect(twelve.filter((text) => /UPDATE\s+\S+messages/i.test(text))).toHaveLength(1)
      })
    ))

  it.effect("a group mixing record and recordSent answers each as asked: a pending report or a subscribed endpoint sends recordSent to the whole row", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        const { org, ids } = yield* leasedMessages(store, 4, "lease-1")
        const [plain, reported, whole, again] = ids as [MessageId, MessageId, MessageId, MessageId]
        // Meta's delivery report for the second one's id came before the send's answer.
        yield* providerReport(store, org, "wamid.reported", "delivered", instant(1))
        const sent = (wamid: string) => ({ _tag: "Sent", provider_message_id: wamid, attempts: 1 } as const)
        const [a, b, c, d, e] = yield* Effect.promise(() =>
          Promise.all([
            store.outbox.recordSent!(plain, "lease-1", sent("wamid.plain"), instant(2)),
            store.outbox.recordSent!(reported, "lease-1", sent("wamid.reported"), instant(2)),
            store.outbox.record.promise!(whole, "lease-1", sent("wamid.whole"), instant(2)),
            store.outbox.recordSent!(again, "lease-1", sent("wamid.again"), instant(2)),
            // The same message asked twice in one group: the second finds its lease gone.
            store.outbox.recordSent!(again, "lease-1", sent("wamid.again.2"), instant(2))
          ]))
        expect([a, b, d, e]).toEqual([Option.some("sent"), Option.some("delivered"), Option.some("sent"), Option.none()])
        expect(Option.map(c!, (message) => [message.uuid, message.status, message.provider_message_id])).toEqual(Option.some([whole, "sent", "wamid.whole"]))
        const status = (id: MessageId) => Effect.map(store.chats.findMessage(org, id), Option.map((message) => [message.status, message.provider_message_id]))
        expect(yield* status(reported)).toEqual(Option.some(["delivered", "wamid.reported"]))
        expect(yield* status(again)).toEqual(Option.some(["sent", "wamid.again"]))
        // With an endpoint subscribed, a lean record writes the event with the whole message.
        const next = yield* leasedMessages(store, 1, "lease-2")
        yield* subscribedEndpoint(store, next.org)
        expect(yield* Effect.promise(() => store.outbox.recordSent!(next.ids[0]!, "lease-2", sent("wamid.announced"), instant(3)))).toEqual(Option.some("sent"))
        expect(yield* eventStatuses(next.ids[0]!)).toEqual(["sent"])
      })
    ))

  it.effect("a group locks its organizations before it writes, and its lean records see a status report stored while it waited", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        const first = yield* leasedMessages(store, 1, "lease-1")
        const second = yield* leasedMessages(store, 1, "lease-1")
        const [held, free] = [first, second].sort((a, b) => (a.org < b.org ? 1 : -1)) as [typeof first, typeof first]
        // Another transaction holds the lock of the organization that sorts last.
        const holder = yield* organizationLockHolder(schemas, schema, held.org)
        const sent = (wamid: string) => ({ _tag: "Sent", provider_message_id: wamid, attempts: 1 } as const)
        const answers = Promise.all([
          store.outbox.recordSent!(free.ids[0]!, "lease-1", sent("wamid.free"), instant(2)),
          store.outbox.recordSent!(held.ids[0]!, "lease-1", sent("wamid.held"), instant(2))
        ])
        yield* Effect.promise(() => vi.waitFor(async () => expect(await Effect.runPromise(holder.blocking)).toBeGreaterThan(0), { timeout: 10_000, interval: 10 }))
        // The group waits for the lock, and has written neither message (a written row would be locked).
        for (const { ids } of [free, held]) {
          expect(yield* holder.query(`SELECT status FROM "${schema}".messages WHERE uuid = $1 FOR UPDATE NOWAIT`, [ids[0]])).toEqual([{ status: "sending" }])
        }
        // A delivery report for the held one is stored under the lock, as the store stores one.
        yield* holder.query(
          `INSERT INTO "${schema}".pending_message_statuses
              (organization_id, provider_message_id, status, from_statuses, failure, reported_at, pending_until)
            VALUES ($1, 'wamid.held', 'delivered', $2::json, NULL, $3, $4)`,
          [held.org, JSON.stringify(MESSAGE_STATUS_PREDECESSORS.delivered), instant(1), instant(60)])
        yield* holder.commit
        expect(yield* Effect.promise(() => answers)).toEqual([Option.some("sent"), Option.some("delivered")])
        const status = (org: OrganizationId, id: MessageId) => Effect.map(store.chats.findMessage(org, id), Option.map((message) => message.status))
        expect(yield* status(free.org, free.ids[0]!)).toEqual(Option.some("sent"))
        expect(yield* status(held.org, held.ids[0]!)).toEqual(Option.some("delivered"))
      })
    ))

  it.effect("a store records one group's transaction at a time: groups never overlap, however many outcomes come at once", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        // 150 outcomes asked in one turn: three groups (64, 64, 22), with two pool connections free.
        const { ids } = yield* leasedMessages(store, 150, "lease-1")
        statements.length = 0
        const outcomes = yield* Effect.all(
          ids.map((id, index) => store.outbox.record(id, "lease-1", { _tag: "Sent", provider_message_id: `wamid.${index}`, attempts: 1 }, instant(1))),
          { concurrency: "unbounded" }
        )
        expect(outcomes.filter(Option.isSome)).toHaveLength(150)
        const bounds = statements.filter((text) => isBegin(text) || text === "COMMIT").map((text) => (isBegin(text) ? "BEGIN" : "COMMIT"))
        expect(bounds).toEqual(["BEGIN", "COMMIT", "BEGIN", "COMMIT", "BEGIN", "COMMIT"])
      })
    ))

  it.effect("a claim is a fixed number of statements, however many channels have due heads", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        const claim = (ms: number) =>
          Effect.gen(function* () {
            statements.length = 0
            const now = Date.parse(instant(0)) + ms
            const claimed = yield* store.outbox.claim({ now, lease: fixtures.uuid(), leaseUntil: now + 30_000, settleMs: 60_000, limit: 100, horizonMs: 1_000 })
            return { claimed, sent: statements.splice(0) }
          })
        yield* queuedOnChannels(store, 1, 3)
        const one = yield* claim(0)
        expect(one.claimed).toHaveLength(3)
        yield* queuedOnChannels(store, 5, 3)
        const five = yield* claim(1)
        expect(five.claimed).toHaveLength(15)
        expect(new Set(five.claimed.map((claimed) => claimed.message.channel_uuid)).size).toBe(5)
        expect(five.sent).toHaveLength(one.sent.length)
      })
    ))

  it.effect("a claim with nothing expired reads a few rows per channel: no range of expired heads walks the backlog", () =>
    Effect.scoped(
      Effect.gen(function* () {
        yield* Effect.promise(() => schemas.empty(schema))
        // A store whose one connection explains every statement it runs (auto_explain, as JSON notices).
        const logged: Array<string> = []
        const explaining = new Pg.Pool({ connectionString: postgresUrl!, max: 1 })
        explaining.on("connect", (client) => {
          client.on("notice", (notice) => void logged.push(notice.message ?? ""))
          client.query("LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; " +
            "SET auto_explain.log_format = 'json'; SET client_min_messages = log").catch(() => undefined)
        })
        yield* Effect.addFinalizer(() => Effect.promise(() => explaining.end()))
        const store = yield* PostgresStorage.make({ pool: explaining, schema })
        yield* queuedOnChannels(store, 3, 200)
        // With the table's statistics, as autovacuum keeps them.
        yield* Effect.promise(() => explaining.query(`ANALYZE ${schema}.messages`))
        logged.length = 0
        const now = Date.parse(instant(0)) + 1
        // A horizon of 100 ms: fewer free slots than the limit, the case where a claim also
        // takes the expired heads (none here: they expire at instant(10 000)).
        const claimed = yield* store.outbox.claim({ now, lease: fixtures.uuid(), leaseUntil: now + 30_000, settleMs: 60_000, limit: 100, horizonMs: 100 })
        expect(claimed.length).toBeGreaterThan(0)
        expect(claimed.length).toBeLessThan(100)
        const plans = logged.filter((text) => text.includes("plan:")).map((text) => JSON.parse(text.slice(text.indexOf("{"))) as { "Query Text": string; Plan: PlanNode })
        const candidates = plans.filter((each) => each["Query Text"].includes("expired_only"))
        expect(candidates).toHaveLength(1)
        // 600 waiting heads on 3 channels: the claim's candidates are the channels' first heads
        // (reading each channel's 200 to find no expired one read 600 more).
        expect(rowsRead(candidates[0]!.Plan)).toBeLessThan(claimed.length + 30)
        // Whether a channel has an expired head is a probe of that channel's range of the expiry
        // index up to now (no row here), never one scan of the whole index by expires_at alone.
        const waiting = plans.filter((each) => each["Query Text"].includes("AS expiring"))
        expect(waiting).toHaveLength(1)
        const probes = nodesOf(waiting[0]!.Plan).filter((node) => node["Index Name"] === "messages_send_queue_expiry" && node["Index Cond"]?.includes("expires_at"))
        expect(probes.length).toBeGreaterThan(0)
        for (const probe of probes) expect(probe["Index Cond"]).toContain("channel_uuid =")
        expect(probes.reduce((sum, node) => sum + rowsRead(node), 0)).toBe(0)
      })
    ))

  it.effect("nextDueAt reads a few rows per channel, not every waiting head", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        yield* queuedOnChannels(store, 3, 200)
        statements.length = 0
        const due = yield* store.outbox.nextDueAt()
        expect(due).not.toBeNull()
        const [text] = statements.splice(0)
        // The rows its plan read from messages (each scan's rows times its loops), by EXPLAIN ANALYZE.
        const plan = yield* Effect.promise(async () => {
          const client = new Pg.Client({ connectionString: postgresUrl! })
          await client.connect()
          try {
            // With the table's statistics, as autovacuum keeps them (without, the planner guesses at 600 rows).
            await client.query(`ANALYZE ${schema}.messages`)
            return (await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`)).rows[0]["QUERY PLAN"][0].Plan as PlanNode
          } finally {
            await client.end()
          }
        })
        // 600 waiting heads on 3 channels: the walk reads each channel's first head (4 rows here;
        // a minimum over every head read all 600).
        expect(rowsRead(plan)).toBeLessThan(40)
      })
    ))

  it.effect("a message leaving the queue finds its lane's next head through the lanes index: a few rows, not every lane of its organization", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        const organizationId = yield* queuedOnChannels(store, 3, 200)
        // The plans of the trigger function's own statements (auto_explain, nested, sent to this client).
        const plans = yield* Effect.promise(async () => {
          const client = new Pg.Client({ connectionString: postgresUrl! })
          await client.connect()
          const logged: Array<string> = []
          client.on("notice", (notice) => void logged.push(notice.message ?? ""))
          try {
            await client.query(`ANALYZE ${schema}.messages`)
            const { rows } = await client.query(
              `SELECT channel_uuid, recipient, send_class FROM ${schema}.messages WHERE organization_id = $1 AND head LIMIT 1`,
              [organizationId]
            )
            const lane = rows[0]
            await client.query("BEGIN")
            for (const setting of ["LOAD 'auto_explain'", "SET LOCAL auto_explain.log_min_duration = 0", "SET LOCAL auto_explain.log_analyze = on",
              "SET LOCAL auto_explain.log_nested_statements = on", "SET LOCAL auto_explain.log_format = 'json'", "SET LOCAL client_min_messages = log"]) {
              await client.query(setting)
            }
            await client.query(`SELECT ${schema}.send_queue_next_head($1, $2, $3, $4)`, [organizationId, lane.channel_uuid, lane.recipient, lane.send_class])
            await client.query(`SELECT ${schema}.send_queue_next_head($1, NULL, $2, $3)`, [organizationId, lane.recipient, lane.send_class])
            await client.query("ROLLBACK")
          } finally {
            await client.end()
          }
          // Each nested UPDATE of the function, as JSON after "plan:".
          return logged.filter((text) => text.includes("SET head = true")).map((text) => JSON.parse(text.slice(text.indexOf("{"))).Plan as PlanNode)
        })
        // With a channel, and without one: 600 waiting on 3 channels, and each look-up reads a
        // few rows (matching the channel by IS NOT DISTINCT FROM read all 600).
        expect(plans).toHaveLength(2)
        for (const plan of plans) expect(rowsRead(plan)).toBeLessThan(10)
      })
    ))

  it.effect("with no subscribed endpoint, a failure is one statement: the status and the failure together", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        const { org } = yield* sentMessage(store)
        const failed = yield* report(store, org, "failed", instant(2))
        expect(failed.outcome).toMatchObject({
          _tag: "Updated",
          changed: true,
          message: { status: "failed", failure: { code: "131047", title: "Re-engagement message" } }
        })
        expect(failed.sent).toHaveLength(1)
      })
    ))

  it.effect("with a subscribed endpoint, a status change writes its event in a transaction; a refused one stays one statement", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        const { org, id } = yield* sentMessage(store)
        yield* subscribedEndpoint(store, org)
        const read = yield* report(store, org, "read", instant(2))
        expect(read.outcome).toMatchObject({ _tag: "Updated", changed: true, message: { uuid: id, status: "read" } })
        expect(read.sent.filter(isBegin)).toHaveLength(1)
        expect(read.sent.at(-1)).toBe("COMMIT")
        expect(yield* eventStatuses(id)).toEqual(["read"])
        const late = yield* report(store, org, "delivered", instant(3))
        expect(late.outcome).toMatchObject({ _tag: "Updated", changed: false, message: { status: "read" } })
        expect(late.sent).toHaveLength(1)
        expect(yield* eventStatuses(id)).toEqual(["read"])
      })
    ))

  it.effect("a report of a provider id no message has is stored as pending, under the organization's lock", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        const { org } = yield* sentMessage(store)
        statements.length = 0
        const outcome = yield* store.chats.updateMessageStatusByProviderId(org, "wamid.unknown", {
          status: "delivered",
          from: MESSAGE_STATUS_PREDECESSORS.delivered,
          now: instant(2),
          pendingUntil: instant(60)
        })
        expect(outcome).toEqual({ _tag: "Pending" })
        expect(statements.filter(isBegin)).toHaveLength(1)
      })
    ))

  it.effect("an inbound message of a sender with a chat is one statement with no subscribed endpoint, a transaction with one", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        const { org } = yield* sentMessage(store)
        const inbound = (wamid: string, now: string) =>
          Effect.suspend(() => {
            statements.length = 0
            return Effect.map(store.chats.appendMessage(org, inboundText(fixtures.phone(0), wamid, now)), (outcome) => ({
              outcome,
              sent: statements.splice(0)
            }))
          })
        const first = yield* inbound("wamid.in.1", instant(2))
        expect(first.outcome).toMatchObject({ _tag: "Appended", contactCreated: false, chatCreated: false, chat: { unread_count: 1 } })
        expect(first.sent).toHaveLength(1)
        // Its redelivery: the statement finds it stored, then the stored message and its chat are read.
        const again = yield* inbound("wamid.in.1", instant(3))
        expect(again.outcome._tag).toBe("Duplicate")
        expect(again.sent.filter(isBegin)).toEqual([])
        yield* subscribedEndpoint(store, org)
        const second = yield* inbound("wamid.in.2", instant(4))
        expect(second.outcome).toMatchObject({ _tag: "Appended", chat: { unread_count: 2 } })
        expect(second.sent.filter(isBegin)).toHaveLength(1)
        expect(second.sent.at(-1)).toBe("COMMIT")
      })
    ))

  it.effect("the channel look-ups by phone_number_id asked in one turn are one statement, each answered with its own number", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        const org = fixtures.organization()
        yield* store.organizations.insert(org)
        const numbers = ["106540352299001", "106540352299002"]
        for (const phone_number_id of numbers) {
          const channel = fixtures.channelRecord({ phone_number_id })
          expect((yield* store.channels.insert(org.id, { channel, access_token_sealed: "v1.sealed" }, 20))._tag).toBe("Inserted")
        }
        statements.length = 0
        const asked = [numbers[1]!, "999999999999999", numbers[0]!, numbers[1]!]
        const found = yield* Effect.all(asked.map((number) => store.channels.findByPhoneNumberId(number)), { concurrency: "unbounded" })
        expect(found.map((owner) => Option.map(owner, ({ channel }) => channel.phone_number_id))).toEqual(asked.map((number) => (numbers.includes(number) ? Option.some(number) : Option.none())))
        expect(statements).toHaveLength(1)
        // A later turn asks again: what changed meanwhile is seen (nothing is cached).
        yield* store.channels.delete(org.id, Option.getOrThrow(found[0]!).channel.uuid)
        expect(Option.isNone(yield* store.channels.findByPhoneNumberId(numbers[1]!))).toBe(true)
      })
    ))

  it.effect("the basic-reply look-ups asked in one turn are one statement, each answered with its own reply", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* recordedStore
        const [org, other] = [fixtures.organization(), fixtures.organization()]
        yield* store.organizations.insert(org)
        yield* store.organizations.insert(other)
        const reply = (organizationId: OrganizationId, trigger: string) =>
          Effect.map(
            store.basicReplies.create(organizationId, {
              uuid: fixtures.uuid() as BasicReplyId,
              name: trigger,
              trigger,
              response: `About ${trigger}`,
              now: instant(1)
            }),
            (outcome) => (outcome._tag === "Created" ? outcome.reply.uuid : expect.fail(`expected Created, got ${outcome._tag}`))
          )
        const hours = yield* reply(org.id, "hours")
        const theirs = yield* reply(other.id, "hours")
        statements.length = 0
        const found = yield* Effect.all(
          [store.basicReplies.findByTrigger(other.id, "Hours"), store.basicReplies.findByTrigger(org.id, "prices"), store.basicReplies.findByTrigger(org.id, "hours ")],
          { concurrency: "unbounded" }
        )
        expect(found.map((match) => Option.map(match, ({ uuid }) => uuid))).toEqual([Option.some(theirs), Option.none(), Option.some(hours)])
        expect(statements).toHaveLength(1)
      })
    ))
})
