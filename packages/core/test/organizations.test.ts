import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, TestClock } from "effect"
import { createHash } from "node:crypto"
import { Core, MemoryStorage, Organizations, Storage, type ApiKeyId, type OrganizationId } from "@switchboard/core"

const TestLayer = Core.layer.pipe(Layer.provideMerge(MemoryStorage.layer))

describe("Organizations", () => {
  it.effect("creates an organization with an unlimited plan and an active subscription by default", () =>
    Effect.gen(function* () {
      const organizations = yield* Organizations
      yield* TestClock.setTime(Date.UTC(2026, 10, 22, 12))
      const org = yield* organizations.create({ name: "  Acme  " })
      expect(org.name).toBe("Acme")
      expect(org.plan).toEqual({ contacts_limit: null, label_limit: null, media_bytes_limit: null, api_access: true })
      expect(org.subscription).toBe("active")
      expect(org.created_at).toBe("2026-11-22T12:00:00.000Z")
      expect(org.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      expect(yield* organizations.get(org.id)).toEqual(org)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("rejects an empty name and negative or fractional limits, writing nothing", () =>
    Effect.gen(function* () {
      const organizations = yield* Organizations
      const empty = yield* Effect.flip(organizations.create({ name: "   " }))
      expect(empty._tag).toBe("InvalidInput")
      const limits = yield* Effect.flip(
        organizations.create({ name: "Acme", plan: { contacts_limit: -1, label_limit: 1.5 } })
      )
      expect(limits._tag === "InvalidInput" && limits.issues.map((i) => i.field)).toEqual([
        "contacts_limit",
        "label_limit"
      ])
      const tooLong = yield* Effect.flip(organizations.create({ name: "x".repeat(256) }))
      expect(tooLong._tag === "InvalidInput" && tooLong.issues[0]?.code).toBe("too_long")
      expect(yield* organizations.list()).toEqual([])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("updates only the fields given", () =>
    Effect.gen(function* () {
      const organizations = yield* Organizations
      const org = yield* organizations.create({ name: "Acme", plan: { contacts_limit: 10 } })
      yield* TestClock.adjust("1 second")
      const updated = yield* organizations.update(org.id, { plan: { label_limit: 3 }, subscription: "inactive" })
      expect(updated.name).toBe("Acme")
      expect(updated.plan).toEqual({ contacts_limit: 10, label_limit: 3, media_bytes_limit: null, api_access: true })
      expect(updated.subscription).toBe("inactive")
      expect(updated.updated_at > org.updated_at).toBe(true)
      expect(yield* organizations.get(org.id)).toEqual(updated)
      const cleared = yield* organizations.update(org.id, { plan: { contacts_limit: null } })
      expect(cleared.plan.contacts_limit).toBeNull()
    }).pipe(Effect.provide(TestLayer)))

  it.effect("fails with OrganizationNotFound for an unknown id", () =>
    Effect.gen(function* () {
      const organizations = yield* Organizations
      const missing = "00000000-0000-4000-8000-000000000000" as OrganizationId
      expect((yield* Effect.flip(organizations.get(missing)))._tag).toBe("OrganizationNotFound")
      expect((yield* Effect.flip(organizations.update(missing, { name: "x" })))._tag).toBe("OrganizationNotFound")
      expect((yield* Effect.flip(organizations.issueApiKey(missing)))._tag).toBe("OrganizationNotFound")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("issues a key of 32 random bytes, stored only as its SHA-256 hash", () =>
    Effect.gen(function* () {
      const organizations = yield* Organizations
      const { organizations: repository } = yield* Storage
      const org = yield* organizations.create({ name: "Acme" })
      const issued = yield* organizations.issueApiKey(org.id)
      expect(issued.api_key).toMatch(/^sb_[A-Za-z0-9_-]{43}$/)
      expect(Buffer.from(issued.api_key.slice(3), "base64url").length).toBe(32)
      expect(issued.prefix).toBe(issued.api_key.slice(0, 11))
      const stored = Option.getOrThrow(yield* repository.findApiKeyById(issued.key_id))
      expect(stored.hash).toBe(createHash("sha256").update(issued.api_key).digest("hex"))
      expect(JSON.stringify(stored)).not.toContain(issued.api_key)
      const second = yield* organizations.issueApiKey(org.id)
      expect(second.api_key).not.toBe(issued.api_key)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("authenticates a key to its organization and rejects unknown and revoked keys", () =>
    Effect.gen(function* () {
      const organizations = yield* Organizations
      const org = yield* organizations.create({ name: "Acme" })
      const issued = yield* organizations.issueApiKey(org.id)
      const authenticated = yield* organizations.authenticate(issued.api_key)
      expect(authenticated).toEqual({ organization: org, api_key_id: issued.key_id })
      expect((yield* Effect.flip(organizations.authenticate(issued.api_key + "x")))._tag).toBe("ApiKeyInvalid")
      expect((yield* Effect.flip(organizations.authenticate("")))._tag).toBe("ApiKeyInvalid")
      const revoked = yield* organizations.revokeApiKey(issued.key_id)
      expect(revoked.revoked_at).not.toBeNull()
      expect((yield* Effect.flip(organizations.authenticate(issued.api_key)))._tag).toBe("ApiKeyInvalid")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("checks the subscription before the plan's API access", () =>
    Effect.gen(function* () {
      const organizations = yield* Organizations
      const org = yield* organizations.create({
        name: "Acme",
        subscription: "inactive",
        plan: { api_access: false }
      })
      const { api_key } = yield* organizations.issueApiKey(org.id)
      expect((yield* Effect.flip(organizations.authenticate(api_key)))._tag).toBe("SubscriptionInactive")
      yield* organizations.update(org.id, { subscription: "active" })
      expect((yield* Effect.flip(organizations.authenticate(api_key)))._tag).toBe("ApiAccessNotAllowed")
      yield* organizations.update(org.id, { plan: { api_access: true } })
      expect((yield* organizations.authenticate(api_key)).organization.id).toBe(org.id)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("fails with ApiKeyNotFound when revoking an unknown key", () =>
    Effect.gen(function* () {
      const organizations = yield* Organizations
      const error = yield* Effect.flip(
        organizations.revokeApiKey("00000000-0000-4000-8000-000000000000" as ApiKeyId)
      )
      expect(error._tag).toBe("ApiKeyNotFound")
    }).pipe(Effect.provide(TestLayer)))
})
