import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit, Layer, Option } from "effect"
import {
  ChannelVerifier,
  Channels,
  Core,
  MemoryStorage,
  Organizations,
  SecretKey,
  Storage,
  WebhookEndpoints,
  generateSecretKey,
  isSealedUnder,
  openSecret,
  parseSecretKeys,
  encodeSecretKey,
  rotateSecretKey,
  sealSecret,
  type OrganizationId,
  StorageError,
  type StorageService
} from "@switchboard/core"
import { failureOf } from "./failure.js"

// Several secret keys and `rotateSecretKey` (docs/deployment.md "Rotating the secret key"):
// the first key seals, every key opens; the rotation seals every channel token and webhook
// secret (current and previous) again under the first key, the check value last; it is
// idempotent and resumable (a store where some values are already re-sealed), and a store
// rotated is served by the new key alone.

const OLD = generateSecretKey()
const NEW = generateSecretKey()
const TOKENS = ["EAAG-token-one-1111", "EAAG-token-two-2222", "EAAG-token-three-3333"]

const verifier = Layer.succeed(ChannelVerifier, { verify: () => Effect.succeed({ display_phone_number: "+15550783881" }) })

/** Core over `storage` with the keys given (the first seals). */
const coreWith = (storage: StorageService, keys: ReadonlyArray<Uint8Array>) =>
  Core.layer.pipe(Layer.provide(Layer.merge(SecretKey.layer(keys), verifier)), Layer.provideMerge(Layer.succeed(Storage, storage)))

/** Channels and webhook endpoints (one with a previous secret in its overlap) sealed under OLD. */
const seed = (storage: StorageService) =>
  Effect.gen(function* () {
    const organization = yield* (yield* Organizations).create({ name: "Acme" })
    const channels = yield* Channels
    const added = []
    for (const [index, token] of TOKENS.entries()) {
      added.push(yield* channels.add(organization.id, { phone_number_id: `10654035224${index}`, waba_id: "1", access_token: token }))
    }
    const endpoints = yield* WebhookEndpoints
    const plain = yield* endpoints.create(organization.id, { url: "https://hooks.example.com/a" })
    const rotating = yield* endpoints.create(organization.id, { url: "https://hooks.example.com/b" })
    const rotated = yield* endpoints.rotateSecret(organization.id, rotating.endpoint.uuid)
    return {
      organizationId: organization.id,
      channels: added,
      secrets: [
        { uuid: plain.endpoint.uuid, secret: plain.secret, previous: null },
        { uuid: rotated.endpoint.uuid, secret: rotated.secret, previous: rotating.secret }
      ]
    }
  }).pipe(Effect.provide(coreWith(storage, [OLD])))

type Seeded = Effect.Effect.Success<ReturnType<typeof seed>>

/** Expects every token and secret usable with `keys` alone, and sealed under `sealedUnder`. */
const expectUsable = (storage: StorageService, seeded: Seeded, keys: ReadonlyArray<Uint8Array>, sealedUnder?: Uint8Array) =>
  Effect.gen(function* () {
    const channels = yield* Channels
    for (const [index, channel] of seeded.channels.entries()) {
      expect((yield* channels.getWithToken(seeded.organizationId as OrganizationId, channel.uuid)).access_token).toBe(TOKENS[index])
    }
    const opening = sealedUnder === undefined ? keys : [sealedUnder]
    if (sealedUnder !== undefined) {
      for (const row of yield* storage.channels.listSealedTokens(null, 100)) expect(isSealedUnder(sealedUnder, row.access_token_sealed)).toBe(true)
    }
    for (const expected of seeded.secrets) {
      const stored = Option.getOrThrow(yield* storage.webhooks.findEndpoint(seeded.organizationId as OrganizationId, expected.uuid))
      expect(openSecret(opening, stored.secret_sealed)).toEqual(Option.some(expected.secret))
      if (expected.previous === null) expect(stored.previous_secret_sealed).toBeNull()
      else expect(openSecret(opening, stored.previous_secret_sealed!)).toEqual(Option.some(expected.previous))
    }
  }).pipe(Effect.provide(coreWith(storage, keys)))

describe("several secret keys", () => {
  it("parseSecretKeys reads one key or several separated by commas, naming a bad entry by position, never its value", () => {
    const one = encodeSecretKey(NEW)
    const two = `${encodeSecretKey(NEW)}, ${Buffer.from(OLD).toString("hex")}`
    expect(Either.getOrThrow(parseSecretKeys(one))).toEqual([NEW])
    expect(Either.getOrThrow(parseSecretKeys(two))).toEqual([NEW, OLD])
    const bad = parseSecretKeys(`${one},not-a-key-at-all`)
    expect(Either.isLeft(bad) && bad.left).toMatch(/^key 2 of 2 \(comma-separated\) must be 32 bytes/)
    expect(JSON.stringify(bad)).not.toContain("not-a-key-at-all")
    expect(Either.isLeft(parseSecretKeys(`${one},`))).toBe(true)
    expect(Either.isLeft(parseSecretKeys(`${one},${one}`))).toBe(true)
  })

  it.effect("the first key seals, every key opens; the key check passes under any configured key", () =>
    Effect.gen(function* () {
      const storage = MemoryStorage.make()
      const seeded = yield* seed(storage)
      // "new,old": everything sealed under OLD still opens; a new value is sealed under NEW.
      yield* expectUsable(storage, seeded, [NEW, OLD], OLD)
      const added = yield* Effect.flatMap(Channels, (channels) =>
        channels.add(seeded.organizationId as OrganizationId, { phone_number_id: "106540352249", waba_id: "1", access_token: "EAAG-later-token-9999" })
      ).pipe(Effect.provide(coreWith(storage, [NEW, OLD])))
      const stored = Option.getOrThrow(yield* storage.channels.findById(seeded.organizationId as OrganizationId, added.uuid))
      expect(isSealedUnder(NEW, stored.access_token_sealed)).toBe(true)
      // A key the store never saw, even among others that it did, starts; one alone does not.
      expect(Exit.isSuccess(yield* Effect.exit(Effect.provide(Effect.void, coreWith(storage, [generateSecretKey(), OLD]))))).toBe(true)
      const wrong = yield* Effect.exit(Effect.provide(Effect.void, coreWith(storage, [NEW])))
      expect(Exit.isFailure(wrong) && JSON.stringify(wrong.cause)).toContain("SecretKeyMismatch")
    }))
})

describe("rotateSecretKey", () => {
  it.effect("needs two keys: one alone changes nothing", () =>
    Effect.gen(function* () {
      const storage = MemoryStorage.make()
      yield* seed(storage)
      const before = yield* storage.channels.listSealedTokens(null, 100)
      const refused = yield* failureOf(rotateSecretKey.pipe(Effect.provide(Layer.merge(SecretKey.layer([OLD]), Layer.succeed(Storage, storage)))))
      expect(refused._tag).toBe("SecretKeyRotationNeedsTwoKeys")
      expect(refused.message).toContain("at least two keys")
      expect(yield* storage.channels.listSealedTokens(null, 100)).toEqual(before)
    }))

  it.effect("interrupted (some values already re-sealed) and run again: every value under the new key, the check value last; the new key alone then serves; again changes nothing", () =>
    Effect.gen(function* () {
      const storage = MemoryStorage.make()
      const seeded = yield* seed(storage)
      // An interrupted run: one token and one current secret already re-sealed, the check value not yet.
      const [firstToken] = yield* storage.channels.listSealedTokens(null, 1)
      const opened = Option.getOrThrow(openSecret(OLD, firstToken!.access_token_sealed))
      expect(yield* storage.channels.resealToken(firstToken!.uuid, firstToken!.access_token_sealed, sealSecret(NEW, opened))).toBe(true)
      const [firstEndpoint] = yield* storage.webhooks.listSealedSecrets(null, 1)
      const secret = Option.getOrThrow(openSecret(OLD, firstEndpoint!.secret_sealed))
      expect(yield* storage.webhooks.resealSecret(firstEndpoint!.uuid, "secret", firstEndpoint!.secret_sealed, sealSecret(NEW, secret))).toBe(true)
      // Servers with "new,old" serve this half-rotated store; one with the new key alone does not start.
      yield* expectUsable(storage, seeded, [NEW, OLD])
      const early = yield* Effect.exit(Effect.provide(Effect.void, coreWith(storage, [NEW])))
      expect(Exit.isFailure(early)).toBe(true)

      const rotate = rotateSecretKey.pipe(Effect.provide(Layer.merge(SecretKey.layer([NEW, OLD]), Layer.succeed(Storage, storage))))
      const report = yield* rotate
      expect(report).toEqual({
        channel_tokens_resealed: 2,
        webhook_secrets_resealed: 2,
        already_current: 2,
        unreadable: 0,
        key_check: "resealed"
      })
      // The new key alone now serves every channel and endpoint; the old alone no longer starts.
      yield* expectUsable(storage, seeded, [NEW], NEW)
      const old = yield* Effect.exit(Effect.provide(Effect.void, coreWith(storage, [OLD])))
      expect(Exit.isFailure(old)).toBe(true)
      // Idempotent: again, nothing to do.
      expect(yield* rotate).toEqual({
        channel_tokens_resealed: 0,
        webhook_secrets_resealed: 0,
        already_current: 6,
        unreadable: 0,
        key_check: "current"
      })
      // The report carries counts only, never a secret.
      for (const value of [...TOKENS, ...seeded.secrets.map((each) => each.secret)]) expect(JSON.stringify(report)).not.toContain(value)
    }))

  it.effect("a run that fails part-way (the store lost after a few writes) leaves every channel usable with both keys; run again, it finishes", () =>
    Effect.gen(function* () {
      const storage = MemoryStorage.make()
      const seeded = yield* seed(storage)
      // A store that fails every write after the second: a crash in the middle of the run.
      let writes = 0
      const failing = (operation: string) => Effect.fail(new StorageError({ operation, cause: new Error("connection lost") }))
      const crashing: StorageService = {
        ...storage,
        channels: {
          ...storage.channels,
          resealToken: (...args) => (++writes > 2 ? failing("channels.resealToken") : storage.channels.resealToken(...args))
        },
        webhooks: {
          ...storage.webhooks,
          resealSecret: (...args) => (++writes > 2 ? failing("webhooks.resealSecret") : storage.webhooks.resealSecret(...args))
        }
      }
      const runOn = (store: StorageService) => rotateSecretKey.pipe(Effect.provide(Layer.merge(SecretKey.layer([NEW, OLD]), Layer.succeed(Storage, store))))
      expect((yield* failureOf(runOn(crashing)))._tag).toBe("StorageError")
      const resealed = (yield* storage.channels.listSealedTokens(null, 100)).filter((row) => isSealedUnder(NEW, row.access_token_sealed))
      expect(resealed).toHaveLength(2)
      // Half-rotated: both keys serve every channel and endpoint; the check value is still the old key's.
      yield* expectUsable(storage, seeded, [NEW, OLD])
      expect(Exit.isFailure(yield* Effect.exit(Effect.provide(Effect.void, coreWith(storage, [NEW]))))).toBe(true)
      const report = yield* runOn(storage)
      expect(report).toMatchObject({ channel_tokens_resealed: 1, webhook_secrets_resealed: 3, already_current: 2, unreadable: 0, key_check: "resealed" })
      yield* expectUsable(storage, seeded, [NEW], NEW)
    }))
})
