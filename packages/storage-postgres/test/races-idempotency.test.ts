import { it } from "@effect/vitest"
import { Effect } from "effect"
import { afterAll, describe, expect } from "vitest"
import type { IdempotencyClaimOutcome, IdempotencyClaimRequest, StorageService } from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { PostgresStorage } from "@switchboard/storage-postgres"
import { postgresUrl, skipWithoutPostgres, testSchemas } from "./support.js"

// Idempotency claims racing across two processes: two stores (two pools) on one schema,
// as two servers sharing a database have them. One statement decides each claim, so of any
// number of concurrent claims of one key exactly one holds it, whichever pool sends it.
const schemas = testSchemas()

const { instant } = fixtures

/** A claim at minute `at`: locked 1 minute, kept 24 hours (1440 minutes). */
const request = (key: string, at: number, resourceUuid = fixtures.uuid()): IdempotencyClaimRequest => ({
  key,
  fingerprint: "fp",
  resourceUuid,
  now: instant(at),
  lockedUntil: instant(at + 1),
  expiresAt: instant(at + 1440)
})

/** Two stores on one fresh schema (the second finds it migrated) and a new organization. */
const twoStores = Effect.gen(function* () {
  const schema = schemas.fresh()
  const make = () => PostgresStorage.make({ connectionString: postgresUrl!, schema, poolSize: 15 })
  const first = yield* make()
  const second = yield* make()
  const organization = fixtures.organization()
  yield* first.organizations.insert(organization)
  return { first, second, organizationId: organization.id }
})

/** `count` claims built by `claim(store, i)`, sent all at once, alternately through each store. */
const race = (
  stores: readonly [StorageService, StorageService],
  count: number,
  claim: (store: StorageService, i: number) => Effect.Effect<IdempotencyClaimOutcome, unknown>
) =>
  Effect.all(
    Array.from({ length: count }, (_, i) => claim(stores[i % 2]!, i)),
    { concurrency: "unbounded" }
  )

describe.skipIf(skipWithoutPostgres)("idempotency claims racing across two stores (PostgreSQL at POSTGRES_URL)", () => {
  afterAll(schemas.drop)

  it.effect("30 concurrent first claims of one key: exactly one claimant, the others see it in progress", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { first, second, organizationId } = yield* twoStores
        for (const key of ["k1", "k2", "k3"]) {
          const uuids = Array.from({ length: 30 }, () => fixtures.uuid())
          const outcomes = yield* race([first, second], 30, (store, i) =>
            store.idempotency.claim(organizationId, request(key, 0, uuids[i]))
          )
          const claimed = outcomes.filter((outcome) => outcome._tag === "Claimed")
          expect(claimed).toHaveLength(1)
          expect(claimed[0]).toMatchObject({ takeover: false })
          expect(uuids).toContain((claimed[0] as { resourceUuid: string }).resourceUuid)
          expect(outcomes.filter((outcome) => outcome._tag === "InProgress")).toHaveLength(29)
        }
      })
    ))

  it.effect("30 concurrent takeovers after the claimant's lock ended: one winner, with the first claimant's uuid", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { first, second, organizationId } = yield* twoStores
        for (const key of ["k1", "k2", "k3"]) {
          expect(yield* first.idempotency.claim(organizationId, request(key, 0, "uuid-first"))).toEqual({
            _tag: "Claimed",
            resourceUuid: "uuid-first",
            takeover: false
          })
          const outcomes = yield* race([first, second], 30, (store) => store.idempotency.claim(organizationId, request(key, 2)))
          expect(outcomes.filter((outcome) => outcome._tag === "Claimed")).toEqual([
            { _tag: "Claimed", resourceUuid: "uuid-first", takeover: true }
          ])
          expect(outcomes.filter((outcome) => outcome._tag === "InProgress")).toHaveLength(29)
          // The winner holds a new lock: a claim at the same minute is still in progress.
          expect(yield* second.idempotency.claim(organizationId, request(key, 2))).toEqual({ _tag: "InProgress" })
        }
      })
    ))

  it.effect("30 concurrent claims of an expired record: one winner holding its own uuid, not a takeover", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { first, second, organizationId } = yield* twoStores
        yield* first.idempotency.claim(organizationId, request("k1", 0, "uuid-old"))
        const uuids = Array.from({ length: 30 }, () => fixtures.uuid())
        const outcomes = yield* race([first, second], 30, (store, i) =>
          store.idempotency.claim(organizationId, request("k1", 1440, uuids[i]))
        )
        const claimed = outcomes.filter((outcome) => outcome._tag === "Claimed")
        expect(claimed).toHaveLength(1)
        expect(claimed[0]).toMatchObject({ takeover: false })
        expect(uuids).toContain((claimed[0] as { resourceUuid: string }).resourceUuid)
        expect(outcomes.filter((outcome) => outcome._tag === "InProgress")).toHaveLength(29)
      })
    ))
})
