import { describe, expect, it } from "@effect/vitest"
import Sqlite from "better-sqlite3"
import { randomUUID } from "node:crypto"
import { Effect, Option } from "effect"
import {
  type BroadcastAudience,
  type BroadcastId,
  type BroadcastRecipientWrite,
  type ChatId,
  type Contact,
  type ContactId,
  type GroupId,
  type LabelId,
  type MessageId,
  type OrganizationId,
  Storage,
  type StorageService
} from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { SQL } from "../src/repositories/broadcasts.js"
import { SQL as OUTBOX } from "../src/repositories/outbox.js"

// Broadcasts on SQLite (repositories/broadcasts.ts, migration 18): every statement reads
// through an index; the audience of a large group is counted and paged fast; a batch of
// recipients is one transaction; a deleted contact's recipient goes with its chat.

/** Epoch ms of the tests' clock origin, and the ISO time `ms` after it. */
const T0 = Date.UTC(2026, 1, 1)
const at = (ms: number): string => new Date(T0 + ms).toISOString()
const LEASE_MS = 30_000

/** A store on a private in-memory database with one organization. */
interface World {
  readonly db: Sqlite.Database
  readonly storage: StorageService
  readonly org: OrganizationId
}

const inWorld = <A, E>(body: (world: World) => Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const db = new Sqlite(":memory:")
    const storage = yield* Effect.provide(Storage, SqliteStorage.layerFromClient(db))
    const organization = fixtures.organization()
    yield* storage.organizations.insert(organization)
    return yield* body({ db, storage, org: organization.id }).pipe(Effect.ensuring(Effect.sync(() => db.close())))
  })

/** The query plan of `sql`, its `detail` lines joined. */
const planOf = (db: Sqlite.Database, sql: string, ...params: Array<unknown>): string =>
  (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((row) => row.detail).join("\n")

/** A full scan of a table of the schema (a JSON list `j` or a subquery may be scanned). */
const TABLE_SCAN = /SCAN (broadcasts|messages|contacts|contact_groups|labels|group_members|contact_labels|b|m|c|g|l|cl)\b/

const AUDIENCE_PARAMETERS = { organization: "o", groups: '["g"]', labels: '["l"]', contacts: '["c"]' }

/** The parameters of each statement of broadcasts.ts for EXPLAIN (values are irrelevant, their number is not). */
const parametersOf = (name: keyof typeof SQL): Array<unknown> => {
  const sql = SQL[name]
  if (sql.includes("@organization")) return [AUDIENCE_PARAMETERS]
  return Array.from(sql.matchAll(/\?/g), () => "x")
}

/** Inserts contacts of the organization straight into the file: uuids random, phones from `base`. */
const insertContacts = (db: Sqlite.Database, organizationId: string, count: number, base: number): Array<string> => {
  const insert = db.prepare("INSERT INTO contacts (uuid, organization_id, phone, created_at, updated_at) VALUES (?, ?, ?, 't', 't')")
  return db.transaction(() =>
    Array.from({ length: count }, (_, i) => {
      const uuid = randomUUID()
      insert.run(uuid, organizationId, fixtures.phone(base + i))
      return uuid
    })
  )()
}

/** The recipient write of `contact`, queued. */
const recipientOf = (broadcastId: BroadcastId, contact: Pick<Contact, "uuid" | "phone">, messageId: string = randomUUID()): BroadcastRecipientWrite => ({
  contact_uuid: contact.uuid,
  chat_uuid: randomUUID() as ChatId,
  message: {
    uuid: messageId as MessageId,
    direction: "outbound",
    type: "template",
    text: "Spring sale",
    template: { name: "sale", language: { code: "en_US" }, components: [] },
    media: null,
    content: null,
    status: "queued",
    provider_message_id: null,
    failure: null,
    channel_uuid: null,
    transport: "recording",
    attempts: 0,
    next_attempt_at: null,
    broadcast_uuid: broadcastId,
    reply_to: null,
    reactions: [],
    created_at: at(1),
    updated_at: at(1)
  },
  to: contact.phone,
  expires_at: at(86_400_000)
})

/** A `sending` broadcast to `audience`, claimed: its uuid and lease. */
const startBroadcast = (world: World, audience: Partial<BroadcastAudience>) =>
  Effect.gen(function* () {
    const broadcast = yield* world.storage.broadcasts.create(world.org, {
      uuid: randomUUID() as BroadcastId,
      name: "Spring sale",
      status: "sending",
      template: { name: "sale", language: { code: "en_US" }, components: [] },
      audience: { group_uuids: [], label_uuids: [], contact_uuids: [], ...audience },
      channel_uuid: null,
      transport: "recording",
      send_at: null,
      now: at(0)
    })
    const start = Option.getOrThrow(yield* world.storage.broadcasts.claimStart({ now: T0 + 1, lease: randomUUID(), leaseUntil: T0 + 1 + LEASE_MS }))
    expect(start.broadcast.uuid).toBe(broadcast.uuid)
    return { broadcast, lease: start.lease }
  })

describe("broadcasts' statements use their indexes", () => {
  it.effect("no statement scans a table; the recipients, counts, claims and audience ranges read their indexes", () =>
    Effect.gen(function* () {
      const db = new Sqlite(":memory:")
      yield* Effect.provide(Storage, SqliteStorage.layerFromClient(db))
      for (const name of Object.keys(SQL) as Array<keyof typeof SQL>) {
        if (name === "insert") continue
        expect(planOf(db, SQL[name], ...parametersOf(name)), name).not.toMatch(TABLE_SCAN)
        expect(planOf(db, SQL[name], ...parametersOf(name)), name).toMatch(/SEARCH/)
      }
      const plans = Object.fromEntries(
        (Object.keys(SQL) as Array<keyof typeof SQL>)
          .filter((name) => name !== "insert")
          .map((name) => [name, planOf(db, SQL[name], ...parametersOf(name))])
      )
      expect(plans["recipients"]).toMatch(/SEARCH m USING INDEX messages_broadcast_recipients \(broadcast_uuid=\? AND contact_uuid>\?\)/)
      expect(plans["recipientsWithStatus"]).toMatch(/SEARCH m USING INDEX messages_broadcast_statuses \(broadcast_uuid=\? AND status=\? AND contact_uuid>\?\)/)
      expect(plans["counts"]).toMatch(/SEARCH messages USING COVERING INDEX messages_broadcast_statuses \(broadcast_uuid=\?\)/)
      expect(plans["hasRecipient"]).toMatch(/USING COVERING INDEX messages_broadcast_recipients \(broadcast_uuid=\? AND contact_uuid=\?\)/)
      expect(plans["membersAfter"]).toMatch(/SEARCH group_members USING PRIMARY KEY \(group_uuid=\? AND contact_uuid>\?\)/)
      expect(plans["carriersAfter"]).toMatch(/SEARCH contact_labels USING PRIMARY KEY \(label_uuid=\? AND contact_uuid>\?\)/)
      expect(plans["countAudience"]).toMatch(/SEARCH m USING PRIMARY KEY \(group_uuid=\?\)/)
      expect(plans["countAudience"]).toMatch(/SEARCH cl USING PRIMARY KEY \(label_uuid=\?\)/)
      expect(plans["resumable"]).toMatch(/USING INDEX broadcasts_sending \(start_finished=\?/)
      expect(plans["dueScheduled"]).toMatch(/USING INDEX broadcasts_scheduled \(send_at<\?\)/)
      expect(plans["finished"]).toMatch(/USING INDEX broadcasts_sending \(start_finished=\?\)/)
      expect(plans["listAfter"]).toMatch(/USING INDEX broadcasts_newest \(organization_id=\? AND \(created_at,uuid\)<\(\?,\?\)\)/)
      expect(plans["listAfter"]).not.toMatch(/TEMP B-TREE/)
      for (const fail of [planOf(db, OUTBOX.failBroadcastQueued, "f", "t", "b", "o"), planOf(db, OUTBOX.failBroadcastQueuedBatch, "f", "t", "b", "o")]) {
        expect(fail).toMatch(/SEARCH messages USING (COVERING )?INDEX messages_broadcast_statuses \(broadcast_uuid=\? AND status=\?\)/)
      }
      db.close()
    }))
})

describe("the audience of a large group", () => {
  it.effect("20 000 members, a label and listed contacts: counted in well under a second, paged in uuid order, each contact once", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const other = fixtures.organization()
        yield* world.storage.organizations.insert(other)
        const members = insertContacts(world.db, world.org, 20_000, 0)
        const labelledOnly = insertContacts(world.db, world.org, 1_000, 20_000)
        const listedOnly = insertContacts(world.db, world.org, 5, 21_000)
        const [theirs] = insertContacts(world.db, other.id, 1, 0)
        insertContacts(world.db, world.org, 2_000, 30_000)
        const group = randomUUID() as GroupId
        const label = randomUUID() as LabelId
        world.db.prepare("INSERT INTO contact_groups VALUES (?, ?, 'All', 'all', 't', 't')").run(group, world.org)
        world.db.prepare("INSERT INTO labels VALUES (?, ?, 'Hot', 'hot', 'red', 't', 't')").run(label, world.org)
        world.db.transaction(() => {
          // Other organizations' groups and labels, so the statistics are not those of one-row tables.
          for (let i = 0; i < 300; i++) {
            world.db.prepare("INSERT INTO contact_groups VALUES (?, ?, ?, ?, 't', 't')").run(randomUUID(), other.id, `g${i}`, `g${i}`)
            world.db.prepare("INSERT INTO labels VALUES (?, ?, ?, ?, 'red', 't', 't')").run(randomUUID(), other.id, `l${i}`, `l${i}`)
          }
          const member = world.db.prepare("INSERT INTO group_members VALUES (?, ?, 't')")
          const carrier = world.db.prepare("INSERT INTO contact_labels VALUES (?, ?, 't')")
          for (const uuid of members) member.run(group, uuid)
          for (const uuid of [...members.filter((_, i) => i % 4 === 0), ...labelledOnly]) carrier.run(label, uuid)
        })()
        world.db.exec("ANALYZE")
        const audience: BroadcastAudience = {
          group_uuids: [group, group, randomUUID() as GroupId],
          label_uuids: [label],
          contact_uuids: [...listedOnly, ...members.slice(0, 10), theirs!, randomUUID()] as Array<ContactId>
        }
        const expected = [...members, ...labelledOnly, ...listedOnly].sort()
        const started = performance.now()
        const count = yield* world.storage.broadcasts.countAudience(world.org, audience)
        const elapsed = performance.now() - started
        expect(count).toBe(21_005)
        expect(elapsed).toBeLessThan(1_000)
        // With statistics (ANALYZE) the plans still start from the lists.
        for (const name of ["countAudience", "groupsOfOrganization", "labelsOfOrganization", "contactsAmong"] as const) {
          expect(planOf(world.db, SQL[name], ...parametersOf(name)), name).not.toMatch(TABLE_SCAN)
        }
        const walked: Array<string> = []
        let after: ContactId | null = null
        for (;;) {
          const page: ReadonlyArray<Contact> = yield* world.storage.broadcasts.audiencePage(world.org, audience, after, 500)
          walked.push(...page.map((contact) => contact.uuid))
          if (page.length < 500) break
          after = page[page.length - 1]!.uuid
        }
        expect(walked).toEqual(expected)
      })
    ), 20_000)
})

describe("a batch of recipients", () => {
  it.effect("is one transaction: a write that fails inside it leaves no recipient, no chat and the start as it was", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const ids = insertContacts(world.db, world.org, 500, 0)
        const { broadcast, lease } = yield* startBroadcast(world, { contact_uuids: ids as Array<ContactId> })
        const page = yield* world.storage.broadcasts.audiencePage(world.org, broadcast.audience, null, 500)
        const recipients = page.map((contact) => recipientOf(broadcast.uuid, contact))
        // The last recipient's message reuses the first one's uuid: its insert fails.
        recipients[499] = recipientOf(broadcast.uuid, page[499]!, recipients[0]!.message.uuid)
        const batch = { recipients, cursor: page[499]!.uuid, finished: true, leaseUntil: T0 + 2 + LEASE_MS, now: at(2) }
        const failed = yield* Effect.either(world.storage.broadcasts.writeRecipients(world.org, broadcast.uuid, lease, batch))
        expect(failed._tag).toBe("Left")
        expect(world.db.prepare("SELECT COUNT(*) FROM messages").pluck().get()).toBe(0)
        expect(world.db.prepare("SELECT COUNT(*) FROM chats").pluck().get()).toBe(0)
        expect(world.db.prepare("SELECT start_cursor, start_finished FROM broadcasts").get()).toEqual({ start_cursor: null, start_finished: 0 })
        // The same batch, whole, is written in one go.
        recipients[499] = recipientOf(broadcast.uuid, page[499]!)
        expect(yield* world.storage.broadcasts.writeRecipients(world.org, broadcast.uuid, lease, { ...batch, recipients })).toBe(true)
        const { counts } = Option.getOrThrow(yield* world.storage.broadcasts.findById(world.org, broadcast.uuid))
        expect(counts).toMatchObject({ total: 500, queued: 500 })
        expect(world.db.prepare("SELECT COUNT(*) FROM messages WHERE send_class = 'broadcast' AND head = 1").pluck().get()).toBe(500)
      })
    ))

  it.effect("a deleted contact's recipient goes with its chat: counts, recipients and completion count only the messages present", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const ids = insertContacts(world.db, world.org, 2, 0).sort() as Array<ContactId>
        const { broadcast, lease } = yield* startBroadcast(world, { contact_uuids: ids })
        const page = yield* world.storage.broadcasts.audiencePage(world.org, broadcast.audience, null, 10)
        const batch = { recipients: page.map((contact) => recipientOf(broadcast.uuid, contact)), cursor: ids[1]!, finished: true, leaseUntil: T0 + 2 + LEASE_MS, now: at(2) }
        expect(yield* world.storage.broadcasts.writeRecipients(world.org, broadcast.uuid, lease, batch)).toBe(true)
        expect(yield* world.storage.contacts.delete(world.org, ids[0]!)).toBe(true)
        const record = Option.getOrThrow(yield* world.storage.broadcasts.findById(world.org, broadcast.uuid))
        expect(record.counts).toMatchObject({ total: 1, queued: 1 })
        const recipients = yield* world.storage.broadcasts.recipients(world.org, broadcast.uuid, { status: null, limit: 10, after: null })
        expect(recipients.map((recipient) => recipient.contact_uuid)).toEqual([ids[1]])
        const cancelled = yield* world.storage.broadcasts.cancel(world.org, broadcast.uuid, { code: "cancelled", title: "Cancelled" }, at(3))
        expect(cancelled._tag === "Done" && cancelled.broadcast.counts).toMatchObject({ total: 1, failed: 1 })
      })
    ))
})
