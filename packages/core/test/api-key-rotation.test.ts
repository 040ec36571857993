import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, TestClock } from "effect"
import { Core, MemoryStorage, Organizations, Storage, type ApiKeyId } from "@switchboard/core"

// Key rotation with an overlap (docs/standalone-server.md "Rotating an API key"): the old
// key gets an `expires_at`, compared with the clock on every request.

const TestLayer = Core.layer.pipe(Layer.provideMerge(MemoryStorage.layer))
const START = Date.UTC(2026, 10, 29, 12)

describe("Organizations.rotateApiKey", () => {
  it.effect("issues a new key and gives the old one an expiry 24 h away by default; both work until then", () =>
    Effect.gen(function* () {
      const organizations = yield* Organizations
      yield* TestClock.setTime(START)
      const org = yield* organizations.create({ name: "Acme" })
      const old = yield* organizations.issueApiKey(org.id)
      const { issued, previous } = yield* organizations.rotateApiKey(old.key_id)
      expect(issued.organization_id).toBe(org.id)
      expect(issued.api_key).toMatch(/^sb_[A-Za-z0-9_-]{43}$/)
      expect(issued.api_key).not.toBe(old.api_key)
      expect(previous).toMatchObject({ id: old.key_id, revoked_at: null, expires_at: "2026-11-30T12:00:00.000Z" })
      expect((yield* organizations.authenticate(old.api_key)).api_key_id).toBe(old.key_id)
      expect((yield* organizations.authenticate(issued.api_key)).api_key_id).toBe(issued.key_id)
      expect((yield* organizations.listApiKeys(org.id)).map((key) => [key.id, key.expires_at])).toEqual([
        [old.key_id, "2026-11-30T12:00:00.000Z"],
        [issued.key_id, null]
      ])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("refuses the old key from the instant it expires, exactly as a revoked key, compared on every request", () =>
    Effect.gen(function* () {
      const organizations = yield* Organizations
      yield* TestClock.setTime(START)
      const org = yield* organizations.create({ name: "Acme" })
      const old = yield* organizations.issueApiKey(org.id)
      const revokedKey = yield* organizations.issueApiKey(org.id)
      yield* organizations.revokeApiKey(revokedKey.key_id)
      const { issued } = yield* organizations.rotateApiKey(old.key_id, { expiresInSeconds: 2 })
      yield* TestClock.adjust("1999 millis")
      expect((yield* organizations.authenticate(old.api_key)).organization.id).toBe(org.id)
      yield* TestClock.adjust("1 millis")
      const expired = yield* Effect.flip(organizations.authenticate(old.api_key))
      const revoked = yield* Effect.flip(organizations.authenticate(revokedKey.api_key))
      expect(expired).toEqual(revoked)
      expect(expired._tag).toBe("ApiKeyInvalid")
      expect(expired.message).toBe(revoked.message)
      expect((yield* organizations.authenticate(issued.api_key)).api_key_id).toBe(issued.key_id)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("0 seconds expires the old key at once; out of range or fractional overlaps are refused, writing nothing", () =>
    Effect.gen(function* () {
      const organizations = yield* Organizations
      yield* TestClock.setTime(START)
      const org = yield* organizations.create({ name: "Acme" })
      const old = yield* organizations.issueApiKey(org.id)
      for (const expiresInSeconds of [-1, 604_801, 1.5, Number.NaN]) {
        const error = yield* Effect.flip(organizations.rotateApiKey(old.key_id, { expiresInSeconds }))
        expect(error._tag === "InvalidInput" && error.issues.map((issue) => issue.field)).toEqual(["expires_in"])
      }
      expect(yield* organizations.listApiKeys(org.id)).toHaveLength(1)
      const week = yield* organizations.rotateApiKey(old.key_id, { expiresInSeconds: 604_800 })
      expect(week.previous.expires_at).toBe("2026-12-06T12:00:00.000Z")
      const now = yield* organizations.rotateApiKey(week.issued.key_id, { expiresInSeconds: 0 })
      expect(now.previous.expires_at).toBe("2026-11-29T12:00:00.000Z")
      expect((yield* Effect.flip(organizations.authenticate(week.issued.api_key)))._tag).toBe("ApiKeyInvalid")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("rotating a key already expiring keeps the earlier expiry; an expired, revoked or unknown key is refused, writing nothing", () =>
    Effect.gen(function* () {
      const organizations = yield* Organizations
      const { organizations: repository } = yield* Storage
      yield* TestClock.setTime(START)
      const org = yield* organizations.create({ name: "Acme" })
      const old = yield* organizations.issueApiKey(org.id)
      yield* organizations.rotateApiKey(old.key_id, { expiresInSeconds: 60 })
      const again = yield* organizations.rotateApiKey(old.key_id, { expiresInSeconds: 3_600 })
      expect(again.previous.expires_at).toBe("2026-11-29T12:01:00.000Z")

      yield* TestClock.adjust("60 seconds")
      expect(yield* Effect.flip(organizations.rotateApiKey(old.key_id))).toMatchObject({
        _tag: "ApiKeyNotRotatable",
        id: old.key_id,
        reason: "expired"
      })
      const revoked = yield* organizations.issueApiKey(org.id)
      yield* organizations.revokeApiKey(revoked.key_id)
      const refusal = yield* Effect.flip(organizations.rotateApiKey(revoked.key_id))
      expect(refusal).toMatchObject({ _tag: "ApiKeyNotRotatable", reason: "revoked" })
      expect(refusal.message).toBe(`API key ${revoked.key_id} is revoked: it cannot be rotated; issue a new key instead`)
      const missing = "00000000-0000-4000-8000-000000000000" as ApiKeyId
      expect((yield* Effect.flip(organizations.rotateApiKey(missing)))._tag).toBe("ApiKeyNotFound")
      expect(yield* repository.listApiKeys(org.id)).toHaveLength(4)
      expect(Option.isSome(yield* repository.findApiKeyById(old.key_id))).toBe(true)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("lists an organization's keys, never a plain key; an unknown organization fails", () =>
    Effect.gen(function* () {
      const organizations = yield* Organizations
      const org = yield* organizations.create({ name: "Acme" })
      const first = yield* organizations.issueApiKey(org.id)
      const keys = yield* organizations.listApiKeys(org.id)
      expect(keys.map((key) => key.id)).toEqual([first.key_id])
      expect(JSON.stringify(keys)).not.toContain(first.api_key)
      const missing = yield* Effect.flip(organizations.listApiKeys("00000000-0000-4000-8000-000000000000" as never))
      expect(missing._tag).toBe("OrganizationNotFound")
    }).pipe(Effect.provide(TestLayer)))
})
