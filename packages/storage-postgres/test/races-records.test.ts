import { expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe } from "vitest"
import type { LabelId, StorageService } from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { PostgresStorage } from "@switchboard/storage-postgres"
import { postgresUrl, skipWithoutPostgres, testSchemas, twoStores } from "./support.js"

const { importRow, instant, phone } = fixtures

// Races between two stores (two pools) on one schema, as two processes would have them:
// the plan limits hold across them, the counter row stays exact, and a key revoked on one
// is refused by the other on its very next look-up. One schema for the file, emptied
// before each test, dropped at the end.
const schemas = testSchemas()
const schema = schemas.fresh()

/** Two stores on the file's schema, emptied first; released with the test's scope. */
const freshStores = twoStores(schemas, schema)

/** `first` for even `i`, `second` for odd. */
const either = (stores: readonly [StorageService, StorageService], i: number) => stores[i % 2]!

/** The organization's `contact_counts.count` and its real number of contacts, read behind the stores' back. */
const counter = (organizationId: string) =>
  Effect.promise(async () => {
    const pool = schemas.pool()
    const counted = await pool.query<{ count: number }>(
      `SELECT count FROM "${schema}".contact_counts WHERE organization_id = $1`,
      [organizationId]
    )
    const real = await pool.query<{ count: string }>(
      `SELECT COUNT(*) AS count FROM "${schema}".contacts WHERE organization_id = $1`,
      [organizationId]
    )
    return { count: counted.rows[0]?.count, real: Number(real.rows[0]!.count) }
  })

describe.skipIf(skipWithoutPostgres)("PostgreSQL server at POSTGRES_URL: races on records", () => {
  beforeAll(() => Effect.runPromise(Effect.scoped(PostgresStorage.make({ connectionString: postgresUrl!, schema }))))
  afterAll(schemas.drop)

  it.effect("60 single-contact imports over two stores against contacts_limit 25: exactly 25 stored", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stores = yield* freshStores
        const org = fixtures.organization({ plan: { contacts_limit: 25, label_limit: null, media_bytes_limit: null, api_access: true } })
        yield* stores[0].organizations.insert(org)
        const outcomes = yield* Effect.all(
          Array.from({ length: 60 }, (_, i) =>
            either(stores, i).contacts.importBulk(org.id, fixtures.importRequest([importRow(phone(i))], { contactsLimit: 25 }))
          ),
          { concurrency: "unbounded" }
        )
        expect(outcomes.filter((outcome) => outcome._tag === "Imported")).toHaveLength(25)
        const refused = outcomes.filter((outcome) => outcome._tag === "LimitExceeded")
        expect(refused).toHaveLength(35)
        expect(refused.every((outcome) => outcome._tag === "LimitExceeded" && outcome.usage === 25)).toBe(true)
        expect(yield* counter(org.id)).toEqual({ count: 25, real: 25 })
        expect((yield* stores[1].contacts.list(org.id, { page: 1, per_page: 1 })).total).toBe(25)
      })
    ))

  it.effect("concurrent imports and deletes over two stores keep contact_counts exact", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stores = yield* freshStores
        const org = fixtures.organization({ plan: { contacts_limit: null, label_limit: null, media_bytes_limit: null, api_access: true } })
        yield* stores[0].organizations.insert(org)
        const seeded = yield* stores[0].contacts.importBulk(
          org.id,
          fixtures.importRequest(Array.from({ length: 40 }, (_, i) => importRow(phone(i))))
        )
        if (seeded._tag !== "Imported") return expect.fail(`expected Imported, got ${seeded._tag}`)
        const deletes = seeded.result.contacts.slice(0, 20).map((contact, i) => either(stores, i).contacts.delete(org.id, contact.uuid))
        const imports = Array.from({ length: 20 }, (_, i) =>
          either(stores, i + 1).contacts.importBulk(
            org.id,
            fixtures.importRequest([importRow(phone(1000 + 2 * i)), importRow(phone(1001 + 2 * i)), importRow(phone(39))])
          )
        )
        yield* Effect.all([...deletes, ...imports], { concurrency: "unbounded" })
        expect(yield* counter(org.id)).toEqual({ count: 60, real: 60 })
      })
    ))

  it.effect("concurrent label creates over two stores against label_limit: exactly the limit", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stores = yield* freshStores
        const org = fixtures.organization({ plan: { contacts_limit: null, label_limit: 7, media_bytes_limit: null, api_access: true } })
        yield* stores[0].organizations.insert(org)
        const outcomes = yield* Effect.all(
          Array.from({ length: 30 }, (_, i) =>
            either(stores, i).labels.create(
              org.id,
              { uuid: fixtures.uuid() as LabelId, name: `label ${i}`, color: "#000000", now: instant(i) },
              7
            )
          ),
          { concurrency: "unbounded" }
        )
        expect(outcomes.filter((outcome) => outcome._tag === "Created")).toHaveLength(7)
        expect(outcomes.filter((outcome) => outcome._tag === "LimitExceeded")).toHaveLength(23)
        expect((yield* stores[1].labels.list(org.id, { page: 1, per_page: 1 })).total).toBe(7)
      })
    ))

  it.effect("a key revoked on one store is refused by the other on its next look-up", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const [first, second] = yield* freshStores
        const org = fixtures.organization()
        const key = fixtures.apiKey(org.id)
        yield* first.organizations.insert(org)
        yield* first.organizations.insertApiKey(key)
        const before = yield* second.organizations.findCredentialByHash(key.hash)
        expect(Option.map(before, (credential) => credential.api_key.revoked_at)).toEqual(Option.some(null))
        const at = "2026-03-01T00:00:00.000Z"
        yield* first.organizations.revokeApiKey(key.id, at)
        const after = yield* second.organizations.findCredentialByHash(key.hash)
        expect(Option.map(after, (credential) => credential.api_key.revoked_at)).toEqual(Option.some(at))
        const inactive = { ...org, subscription: "inactive" as const }
        yield* second.organizations.replace(inactive)
        const deactivated = yield* first.organizations.findCredentialByHash(key.hash)
        expect(Option.map(deactivated, (credential) => credential.organization.subscription)).toEqual(Option.some("inactive"))
      })
    ))
})
