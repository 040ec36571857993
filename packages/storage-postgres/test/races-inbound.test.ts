import { expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Option } from "effect"
import { afterAll, beforeAll, describe } from "vitest"
import type { ChatId, OrganizationId, StorageService } from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { PostgresStorage } from "@switchboard/storage-postgres"
import { inboundText, organizationWithSenders } from "./provider-reports.js"
import { organizationLockHolder, postgresUrl, skipWithoutPostgres, testSchemas, twoStores } from "./support.js"

const { importRow, instant, phone } = fixtures

// Inbound messages of a sender that has a contact and a chat lock only that chat's row
// (repositories/chats.ts `appendToLockedChat`); a new sender's, or a contact's without a
// chat, take the organization's lock. Their races across two stores (two pools): Meta's
// redeliveries of one message at once, a new sender's first messages at once, and their
// independence from a transaction holding the organization's row. One schema for the
// file, emptied before each test, dropped at the end.
const schemas = testSchemas()
const schema = schemas.fresh()

/** Two stores on the file's schema, emptied first; released with the test's scope. */
const freshStores = twoStores(schemas, schema)

/** Per phone: its contacts, its chats, its chat's unread count, and each stored wamid's number of messages and of `message.received` events. */
const storedOf = (org: OrganizationId, phones: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    const pool = schemas.pool()
    const result = []
    for (const from of phones) {
      const contacts = await pool.query<{ uuid: string }>(
        `SELECT uuid FROM "${schema}".contacts WHERE organization_id = $1 AND phone = $2`,
        [org, from]
      )
      const chats = await pool.query<{ unread_count: number }>(
        `SELECT unread_count FROM "${schema}".chats WHERE contact_uuid = ANY($1::text[])`,
        [contacts.rows.map((row) => row.uuid)]
      )
      const messages = await pool.query<{ wamid: string; messages: string; events: string }>(
        `SELECT m.provider_message_id AS wamid, COUNT(*) AS messages,
            (SELECT COUNT(*) FROM "${schema}".webhook_events AS e
              WHERE e.type = 'message.received' AND e.data->>'provider_message_id' = m.provider_message_id) AS events
          FROM "${schema}".messages AS m WHERE m.organization_id = $1 AND m.contact_uuid = ANY($2::text[])
          GROUP BY m.provider_message_id ORDER BY m.provider_message_id`,
        [org, contacts.rows.map((row) => row.uuid)]
      )
      result.push({
        contacts: contacts.rows.length,
        chats: chats.rows.length,
        unread: chats.rows[0]?.unread_count,
        messages: messages.rows.map((row) => [row.wamid, Number(row.messages), Number(row.events)])
      })
    }
    return result
  })

describe.skipIf(skipWithoutPostgres)("PostgreSQL server at POSTGRES_URL: races on inbound messages", () => {
  beforeAll(() => Effect.runPromise(Effect.scoped(PostgresStorage.make({ connectionString: postgresUrl!, schema }))))
  afterAll(schemas.drop)

  // With an endpoint subscribed, every append is a transaction that locks the chat
  // (appendToLockedChat); without one, the common case is one autocommit statement
  // (appendInboundAlone) that writes only when the chat's row has not changed since its
  // snapshot.
  for (const subscribed of [true, false]) {
    it.live(
      `each of two messages delivered four times at once from two stores, by senders with a chat, without one and new, ${subscribed ? "an endpoint subscribed" : "no endpoint"}: each stored once`,
      () =>
        Effect.scoped(
          Effect.gen(function* () {
            const stores = yield* freshStores
            // Phones 0-3: contacts with a chat; 4-5: contacts without one; 6-9: new senders.
            const org = yield* organizationWithSenders(stores[0], 4, 2, subscribed)
            const phones = Array.from({ length: 10 }, (_, i) => phone(i))
            const deliveries = phones.flatMap((from, i) =>
              [0, 1, 2, 3, 4, 5, 6, 7].map((n) => ({ store: stores[n % 2]!, request: inboundText(from, `wamid.${i}.${n % 2}`, instant(1)) }))
            )
            const outcomes = yield* Effect.all(
              deliveries.map(({ store, request }) => store.chats.appendMessage(org, request)),
              { concurrency: "unbounded" }
            )
            const appended = outcomes.filter((outcome) => outcome._tag === "Appended")
            expect(appended).toHaveLength(20)
            expect(outcomes.filter((outcome) => outcome._tag === "Duplicate")).toHaveLength(60)
            expect(new Set(appended.map((outcome) => outcome.message.provider_message_id)).size).toBe(20)
            const stored = yield* storedOf(org, phones)
            for (const [i, of] of stored.entries()) {
              expect(of).toEqual({
                contacts: 1,
                chats: 1,
                unread: 2,
                messages: [[`wamid.${i}.0`, 1, subscribed ? 1 : 0], [`wamid.${i}.1`, 1, subscribed ? 1 : 0]]
              })
            }
            // Each answer's chat record counts the messages stored by then: 1 or 2 unread.
            for (const outcome of appended) expect([1, 2]).toContain(outcome.chat.unread_count)
          })
        ),
      30_000
    )
  }

  it.live("an inbound message of a sender with a chat does not wait for a transaction holding the organization's lock", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stores = yield* freshStores
        const org = yield* organizationWithSenders(stores[0], 1, 0)
        const holder = yield* organizationLockHolder(schemas, schema, org)
        const outcome = yield* stores[1].chats.appendMessage(org, inboundText(phone(0), "wamid.held", instant(1))).pipe(
          Effect.timeoutFail({ duration: Duration.seconds(3), onTimeout: () => new Error("waited for the organization's lock") })
        )
        expect(outcome).toMatchObject({ _tag: "Appended", contactCreated: false, chatCreated: false, chat: { unread_count: 1 } })
        // A new sender's message waits for it (creating a contact takes the organization's
        // lock), then is stored once the holder lets go.
        const waiting = yield* Effect.fork(stores[1].chats.appendMessage(org, inboundText(phone(1), "wamid.new", instant(1))))
        yield* Effect.sleep(Duration.millis(500))
        expect(Option.isNone(yield* Fiber.poll(waiting))).toBe(true)
        yield* holder.letGo
        expect(yield* Fiber.join(waiting)).toMatchObject({ _tag: "Appended", contactCreated: true, chatCreated: true })
      })
    ))
})
