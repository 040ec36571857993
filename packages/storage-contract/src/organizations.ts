import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Storage } from "@switchboard/core"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"

/** Contract of `Storage.organizations`: organizations and API keys. */
export const organizationsContract = ({ makeLayer }: StorageContractOptions): void => {
  describe("organizations", () => {
    const run = <A, E>(body: Effect.Effect<A, E, Storage>) => body.pipe(Effect.provide(makeLayer()))

    it.effect("inserts and finds an organization by id, every field as stored", () =>
      run(
        Effect.gen(function* () {
          const { organizations } = yield* Storage
          const org = fixtures.organization({ plan: { contacts_limit: 0, label_limit: null, media_bytes_limit: 5_000_000_000, api_access: false } })
          yield* organizations.insert(org)
          expect(yield* organizations.findById(org.id)).toEqual(Option.some(org))
        })
      ))

    it.effect("finds nothing for an unknown id", () =>
      run(
        Effect.gen(function* () {
          const { organizations } = yield* Storage
          expect(yield* organizations.findById(fixtures.organization().id)).toEqual(Option.none())
        })
      ))

    it.effect("replaces an existing organization and reports an unknown one", () =>
      run(
        Effect.gen(function* () {
          const { organizations } = yield* Storage
          const org = fixtures.organization()
          yield* organizations.insert(org)
          const changed = {
            ...org,
            name: "Renamed",
            subscription: "inactive" as const,
            plan: { contacts_limit: 5, label_limit: 0, media_bytes_limit: 0, api_access: false },
            updated_at: new Date(Date.UTC(2027, 0, 1)).toISOString()
          }
          expect(yield* organizations.replace(changed)).toBe(true)
          expect(yield* organizations.findById(org.id)).toEqual(Option.some(changed))
          expect(yield* organizations.replace(fixtures.organization())).toBe(false)
        })
      ))

    it.effect("lists every organization, oldest first", () =>
      run(
        Effect.gen(function* () {
          const { organizations } = yield* Storage
          const first = fixtures.organization()
          const second = fixtures.organization()
          yield* organizations.insert(second)
          yield* organizations.insert(first)
          expect(yield* organizations.list()).toEqual([first, second])
        })
      ))

    it.effect("stores API keys and finds them by id", () =>
      run(
        Effect.gen(function* () {
          const { organizations } = yield* Storage
          const org = fixtures.organization()
          const key = fixtures.apiKey(org.id)
          yield* organizations.insert(org)
          yield* organizations.insertApiKey(key)
          expect(yield* organizations.findApiKeyById(key.id)).toEqual(Option.some(key))
          expect(yield* organizations.findApiKeyById(fixtures.apiKey(org.id).id)).toEqual(Option.none())
        })
      ))

    it.effect("finds a credential by hash with its current organization", () =>
      run(
        Effect.gen(function* () {
          const { organizations } = yield* Storage
          const org = fixtures.organization()
          const other = fixtures.organization()
          const key = fixtures.apiKey(org.id)
          const otherKey = fixtures.apiKey(other.id)
          yield* organizations.insert(org)
          yield* organizations.insert(other)
          yield* organizations.insertApiKey(key)
          yield* organizations.insertApiKey(otherKey)
          expect(yield* organizations.findCredentialByHash(key.hash)).toEqual(
            Option.some({ api_key: key, organization: org })
          )
          const renamed = { ...org, name: "Changed", subscription: "inactive" as const }
          yield* organizations.replace(renamed)
          expect(yield* organizations.findCredentialByHash(key.hash)).toEqual(
            Option.some({ api_key: key, organization: renamed })
          )
          expect(yield* organizations.findCredentialByHash("f".repeat(64))).toEqual(Option.none())
        })
      ))

    it.effect("answers concurrent look-ups of credentials each with its own: several keys, the same key twice, a missing hash", () =>
      run(
        Effect.gen(function* () {
          const { organizations } = yield* Storage
          const orgs = [fixtures.organization(), fixtures.organization()]
          const keys = [fixtures.apiKey(orgs[0]!.id), fixtures.apiKey(orgs[1]!.id), fixtures.apiKey(orgs[0]!.id)]
          for (const org of orgs) yield* organizations.insert(org)
          for (const key of keys) yield* organizations.insertApiKey(key)
          const hashes = [keys[0]!.hash, "e".repeat(64), keys[1]!.hash, keys[0]!.hash, keys[2]!.hash]
          const found = yield* Effect.all(
            hashes.map((hash) => organizations.findCredentialByHash(hash)),
            { concurrency: "unbounded" }
          )
          expect(found).toEqual([
            Option.some({ api_key: keys[0], organization: orgs[0] }),
            Option.none(),
            Option.some({ api_key: keys[1], organization: orgs[1] }),
            Option.some({ api_key: keys[0], organization: orgs[0] }),
            Option.some({ api_key: keys[2], organization: orgs[0] })
          ])
        })
      ))

    it.effect("revokes a key once: a second revocation keeps the first time", () =>
      run(
        Effect.gen(function* () {
          const { organizations } = yield* Storage
          const org = fixtures.organization()
          const key = fixtures.apiKey(org.id)
          yield* organizations.insert(org)
          yield* organizations.insertApiKey(key)
          const first = "2026-03-01T00:00:00.000Z"
          expect(yield* organizations.revokeApiKey(key.id, first)).toEqual(Option.some({ ...key, revoked_at: first }))
          expect(yield* organizations.revokeApiKey(key.id, "2026-04-01T00:00:00.000Z")).toEqual(
            Option.some({ ...key, revoked_at: first })
          )
          const credential = yield* organizations.findCredentialByHash(key.hash)
          expect(Option.map(credential, (c) => c.api_key.revoked_at)).toEqual(Option.some(first))
          expect(yield* organizations.revokeApiKey(fixtures.apiKey(org.id).id, first)).toEqual(Option.none())
        })
      ))

    it.effect("lists an organization's keys oldest first, revoked and expiring ones too, none of another organization", () =>
      run(
        Effect.gen(function* () {
          const { organizations } = yield* Storage
          const org = fixtures.organization()
          const other = fixtures.organization()
          yield* organizations.insert(org)
          yield* organizations.insert(other)
          const newest = fixtures.apiKey(org.id, { created_at: fixtures.instant(3) })
          const oldest = fixtures.apiKey(org.id, { created_at: fixtures.instant(1), revoked_at: fixtures.instant(2) })
          const middle = fixtures.apiKey(org.id, { created_at: fixtures.instant(2), expires_at: fixtures.instant(60) })
          for (const key of [newest, fixtures.apiKey(other.id), oldest, middle]) yield* organizations.insertApiKey(key)
          expect(yield* organizations.listApiKeys(org.id)).toEqual([oldest, middle, newest])
          expect(yield* organizations.listApiKeys(fixtures.organization().id)).toEqual([])
        })
      ))

    it.effect("rotates a key in one step: the old key gets its expiry, the new key is stored and found by its hash; an expired key is still found", () =>
      run(
        Effect.gen(function* () {
          const { organizations } = yield* Storage
          const org = fixtures.organization()
          yield* organizations.insert(org)
          const old = fixtures.apiKey(org.id)
          yield* organizations.insertApiKey(old)
          const successor = fixtures.apiKey(org.id)
          const expiresAt = fixtures.instant(1440)
          const rotated = yield* organizations.rotateApiKey(old.id, successor, expiresAt)
          expect(rotated).toEqual(Option.some({ ...old, expires_at: expiresAt }))
          expect(yield* organizations.findApiKeyById(old.id)).toEqual(Option.some({ ...old, expires_at: expiresAt }))
          expect(yield* organizations.findApiKeyById(successor.id)).toEqual(Option.some(successor))
          // Stores never filter on the expiry: core compares it with its clock.
          expect(yield* organizations.findCredentialByHash(old.hash)).toEqual(
            Option.some({ api_key: { ...old, expires_at: expiresAt }, organization: org })
          )
          expect(yield* organizations.findCredentialByHash(successor.hash)).toEqual(
            Option.some({ api_key: successor, organization: org })
          )
        })
      ))

    it.effect("a rotation keeps an earlier expiry, takes a later one's place, and refuses a revoked, unknown or other organization's key, writing nothing", () =>
      run(
        Effect.gen(function* () {
          const { organizations } = yield* Storage
          const org = fixtures.organization()
          const other = fixtures.organization()
          yield* organizations.insert(org)
          yield* organizations.insert(other)
          const expiring = fixtures.apiKey(org.id, { expires_at: fixtures.instant(10) })
          yield* organizations.insertApiKey(expiring)
          // Later than its expiry: the earlier one is kept.
          const first = fixtures.apiKey(org.id)
          expect(yield* organizations.rotateApiKey(expiring.id, first, fixtures.instant(20))).toEqual(Option.some(expiring))
          // Earlier: it replaces it.
          const second = fixtures.apiKey(org.id)
          expect(yield* organizations.rotateApiKey(expiring.id, second, fixtures.instant(5))).toEqual(
            Option.some({ ...expiring, expires_at: fixtures.instant(5) })
          )

          const revoked = fixtures.apiKey(org.id, { revoked_at: fixtures.instant(1) })
          yield* organizations.insertApiKey(revoked)
          const refused = [fixtures.apiKey(org.id), fixtures.apiKey(org.id), fixtures.apiKey(other.id)]
          expect(yield* organizations.rotateApiKey(revoked.id, refused[0]!, fixtures.instant(30))).toEqual(Option.none())
          expect(yield* organizations.rotateApiKey(fixtures.apiKey(org.id).id, refused[1]!, fixtures.instant(30))).toEqual(Option.none())
          expect(yield* organizations.rotateApiKey(first.id, refused[2]!, fixtures.instant(30))).toEqual(Option.none())
          for (const key of refused) {
            expect(yield* organizations.findApiKeyById(key.id)).toEqual(Option.none())
            expect(yield* organizations.findCredentialByHash(key.hash)).toEqual(Option.none())
          }
          expect(yield* organizations.findApiKeyById(revoked.id)).toEqual(Option.some(revoked))
          expect(yield* organizations.findApiKeyById(first.id)).toEqual(Option.some(first))
          expect((yield* organizations.listApiKeys(org.id)).map((key) => key.id).sort()).toEqual(
            [expiring.id, first.id, second.id, revoked.id].sort()
          )
        })
      ))

    it.effect("starts empty: each test gets a fresh store", () =>
      run(
        Effect.gen(function* () {
          const { organizations } = yield* Storage
          expect(yield* organizations.list()).toEqual([])
        })
      ))
  })
}
