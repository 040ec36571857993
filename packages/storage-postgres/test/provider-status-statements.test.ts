import { expect, it } from "@effect/vitest"
import Pg from "pg"
import { Effect } from "effect"
import { afterAll, beforeAll, describe } from "vitest"
import {
  type ChatId,
  MESSAGE_STATUS_PREDECESSORS,
  type MessageId,
  type MessageStatus,
  type OrganizationId,
  type StorageService,
  type WebhookEndpointId
} from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { PostgresStorage } from "@switchboard/storage-postgres"
import { postgresUrl, skipWithoutPostgres, testSchemas } from "./support.js"

const { importRow, instant, phone } = fixtures

// The round trips of a provider's status report (repositories/provider-status.ts): with no
// event to write it is ONE autocommit statement (no BEGIN/COMMIT); a status change that an
// endpoint subscribes to runs in a transaction that writes the event with it. Every
// statement the store sends goes through a pg Client that records its text.
const schemas = testSchemas()
const schema = schemas.fresh()

/** The text of every statement sent through {@link pool}, in order. */
const statements: Array<string> = []

class RecordingClient extends Pg.Client {
  override query(...args: Array<unknown>): never {
    const first = args[0] as string | { text?: string } | undefined
    statements.push(typeof first === "string" ? first : (first?.text ?? ""))
    return (super.query as (...a: Array<unknown>) => never)(...args)
  }
}

let pool: Pg.Pool | undefined

/** A store on the file's schema (emptied first) over the recording pool; released with the test's scope. */
const recordedStore = Effect.gen(function* () {
  yield* Effect.promise(() => schemas.empty(schema))
  pool ??= new Pg.Pool({ connectionString: postgresUrl!, max: 2, Client: RecordingClient })
  return yield* PostgresStorage.make({ pool, schema })
})

/** An organization with one outbound message sent as `wamid.0` at `instant(1)`. */
const sentMessage = (store: StorageService) =>
  Effect.gen(function* () {
    const org = fixtures.organization()
    yield* store.organizations.insert(org)
    const imported = yield* store.contacts.importBulk(org.id, fixtures.importRequest([importRow(phone(0))]))
    if (imported._tag !== "Imported") return expect.fail(`expected Imported, got ${imported._tag}`)
    const id = fixtures.uuid() as MessageId
    const appended = yield* store.chats.appendMessage(org.id, {
      contact: { _tag: "ById" as const, uuid: imported.result.contacts[0]!.uuid },
      newChat: { uuid: fixtures.uuid() as ChatId, status: "open" as const },
      message: {
        uuid: id,
        direction: "outbound" as const,
        type: "text" as const,
        text: "hello",
        template: null,
        media: null,
        content: null,
        status: "queued" as const,
        provider_message_id: null,
        failure: null,
        channel_uuid: null,
        attempts: 0,
        next_attempt_at: null,
        broadcast_uuid: null,
        created_at: instant(0),
        updated_at: instant(0)
      },
      unreadIncrement: 0,
      reopen: { from: [], to: "open" as const },
      dedupe: false,
      now: instant(0)
    })
    expect(appended._tag).toBe("Appended")
    const sent = yield* store.chats.updateMessageStatus(org.id, id, {
      status: "sent",
      from: MESSAGE_STATUS_PREDECESSORS.sent,
      provider_message_id: "wamid.0",
      now: instant(1)
    })
    expect(sent._tag).toBe("Updated")
    return { org: org.id, id }
  })

/** The provider's report of `status` for `wamid.0` at `now`, and the statements it sent. */
const report = (store: StorageService, org: OrganizationId, status: MessageStatus, now: string) =>
  Effect.gen(function* () {
    statements.length = 0
    const outcome = yield* store.chats.updateMessageStatusByProviderId(org, "wamid.0", {
      status,
      from: MESSAGE_STATUS_PREDECESSORS[status],
      ...(status === "failed" ? { failure: { code: "131047", title: "Re-engagement message" } } : {}),
      now,
      pendingUntil: instant(60)
    })
    return { outcome, sent: statements.splice(0) }
  })

/** The statuses of the `message.status_updated` events of message `id`, by `created_at`. */
const eventStatuses = (id: MessageId) =>
  Effect.promise(async () => {
    const rows = await schemas
      .pool()
      .query<{ status: string }>(
        `SELECT data->>'status' AS status FROM "${schema}".webhook_events
          WHERE type = 'message.status_updated' AND data->>'uuid' = $1 ORDER BY created_at`,
        [id]
      )
    return rows.rows.map((row) => row.status)
  })

const isBegin = (text: string) => /^\s*BEGIN/i.test(text)

describe.skipIf(skipWithoutPostgres)("PostgreSQL server at POSTGRES_URL: round trips of provider status reports", () => {
  beforeAll(() => Effect.runPromise(Effect.scoped(PostgresStorage.make({ connectionString: postgresUrl!, schema }))))
  afterAll(async () => {
    await pool?.end()
    await schemas.drop()
  })

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
        const endpoint = {
          uuid: fixtures.uuid() as WebhookEndpointId,
          url: "https://example.com/hooks",
          events: null,
          description: null,
          enabled: true,
          created_at: instant(0),
          updated_at: instant(0)
        }
        expect((yield* store.webhooks.insertEndpoint(org, { endpoint, secret_sealed: "sealed" }, 10))._tag).toBe("Inserted")
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
})
