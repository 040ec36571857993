import { expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { afterAll, beforeAll, describe } from "vitest"
import {
  type MessageId,
  type MessageStatus,
  type OrganizationId,
  type StorageService
} from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { PostgresStorage } from "@switchboard/storage-postgres"
import { eventStatuses as eventStatusesOf, providerReport, sentMessages } from "./provider-reports.js"
import { organizationLockHolder, postgresUrl, skipWithoutPostgres, testSchemas, twoStores } from "./support.js"

const { instant } = fixtures

// The provider's status reports of messages that have their provider id take no
// organization lock (repositories/providerStatus.ts): their races on one message, across
// two stores (two pools), and their independence from a transaction holding the
// organization's row. One schema for the file, emptied before each test, dropped at the end.
const schemas = testSchemas()
const schema = schemas.fresh()

/** Two stores on the file's schema, emptied first; released with the test's scope. */
const freshStores = twoStores(schemas, schema)

/** A provider report of `status` for `wamid.<i>` at `now`, as core makes it. */
const report = (store: StorageService, org: OrganizationId, i: number, status: MessageStatus, now: string) =>
  providerReport(store, org, `wamid.${i}`, status, now)

/** The statuses of the `message.status_updated` events of message `id` after its send. */
const eventStatuses = (id: MessageId) => eventStatusesOf(schemas.pool(), schema, id)

/** The stored status of message `id`, read behind the stores' back. */
const storedStatus = (id: MessageId) =>
  Effect.promise(async () => {
    const rows = await schemas.pool().query<{ status: string }>(`SELECT status FROM "${schema}".messages WHERE uuid = $1`, [id])
    return rows.rows[0]!.status
  })

/**
 * 30 sent messages of an organization with a subscribed endpoint, each reported `first` and
 * `second` at once, from the two stores (alternating which store reports which); resolves
 * the messages' uuids and each message's two outcomes, in that order.
 */
const raced = (first: readonly [MessageStatus, string], second: readonly [MessageStatus, string]) =>
  Effect.gen(function* () {
    const stores = yield* freshStores
    const { org, ids } = yield* sentMessages(stores[0], 30, { subscribed: true })
    const outcomes = yield* Effect.all(
      ids.flatMap((_, i) => [
        report(stores[i % 2]!, org, i, ...first),
        report(stores[(i + 1) % 2]!, org, i, ...second)
      ]),
      { concurrency: "unbounded" }
    )
    return { ids, pairs: ids.map((_, i) => outcomes.slice(2 * i, 2 * i + 2)) }
  })

describe.skipIf(skipWithoutPostgres)("PostgreSQL server at POSTGRES_URL: races on provider status reports", () => {
  beforeAll(() => Effect.runPromise(Effect.scoped(PostgresStorage.make({ connectionString: postgresUrl!, schema }))))
  afterAll(schemas.drop)

  it.effect("`failed` and `delivered` of one sent message from two stores at once: one wins, one change, one event", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { ids, pairs } = yield* raced(["failed", instant(2)], ["delivered", instant(2)])
        for (const [i, id] of ids.entries()) {
          const changed = pairs[i]!.filter((outcome) => outcome._tag === "Updated" && outcome.changed)
          expect(changed).toHaveLength(1)
          const final = yield* storedStatus(id)
          expect(["failed", "delivered"]).toContain(final)
          expect(yield* eventStatuses(id)).toEqual([final])
        }
      })
    ))

  it.effect("`delivered` and `read` of one sent message from two stores at once: never back, one event per real change", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { ids, pairs } = yield* raced(["delivered", instant(2)], ["read", instant(3)])
        for (const [i, id] of ids.entries()) {
          expect(yield* storedStatus(id)).toBe("read")
          const changes = pairs[i]!.filter((outcome) => outcome._tag === "Updated" && outcome.changed)
          const events = yield* eventStatuses(id)
          // Either delivered then read (two changes), or read first and delivered refused (one).
          expect(events).toEqual(changes.length === 2 ? ["delivered", "read"] : ["read"])
        }
      })
    ))

  it.live("a status report of a sent message does not wait for a transaction holding the organization's lock", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stores = yield* freshStores
        const { org, ids } = yield* sentMessages(stores[0], 1, { subscribed: true })
        yield* organizationLockHolder(schemas, schema, org)
        const outcome = yield* report(stores[1], org, 0, "delivered", instant(2)).pipe(
          Effect.timeoutFail({ duration: Duration.seconds(3), onTimeout: () => new Error("waited for the organization's lock") })
        )
        expect(outcome).toMatchObject({ _tag: "Updated", changed: true, message: { status: "delivered" } })
        expect(yield* eventStatuses(ids[0]!)).toEqual(["delivered"])
      })
    ))

  it.live("status reports racing with the deletion of the endpoint they notify: both succeed, no delivery to it remains", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stores = yield* freshStores
        const { org, ids, endpoint } = yield* sentMessages(stores[0], 40, { subscribed: true })
        const [deleted] = yield* Effect.all(
          [
            Effect.sleep(Duration.millis(5)).pipe(Effect.zipRight(stores[1].webhooks.deleteEndpoint(org, endpoint!))),
            Effect.all(
              ids.map((_, i) => report(stores[i % 2]!, org, i, "delivered", instant(2))),
              { concurrency: "unbounded" }
            )
          ],
          { concurrency: "unbounded" }
        )
        expect(deleted).toBe(true)
        const left = yield* Effect.promise(() =>
          schemas.pool().query(`SELECT 1 FROM "${schema}".webhook_deliveries WHERE endpoint_uuid = $1`, [endpoint!])
        )
        expect(left.rows).toHaveLength(0)
      })
    ))
})
