import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit, Layer, Option } from "effect"
import {
  Channels,
  ChannelVerifier,
  Core,
  MemoryStorage,
  Organizations,
  SecretKey,
  Storage,
  encodeSecretKey,
  generateSecretKey,
  openSecret,
  parseSecretKey,
  sealSecret,
  type ChannelInput
} from "@switchboard/core"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import { failureOf } from "./failure.js"

// Channels in core (docs/channels.md): the secret box, the Graph verifier against the
// WhatsApp simulator, and the service operations the webhook and send paths will use.

const TOKEN = "EAAGcoretoken-000000000000000042"

/**
 * The WhatsApp simulator stands in for the Graph API: it answers the look-up of the
 * numbers these tests add (display number `15550100123`) and records each request.
 */
let simulator: WhatsAppSimulator
let baseUrl = ""
const calls = () => simulator.received().map(({ authorization, path }) => ({ url: path, authorization: authorization ?? undefined }))

beforeAll(async () => {
  simulator = await startSimulator({
    numbers: ["1001", "1002", "2001", "2002", "2003", "3001", "4001"].map((phone_number_id) => ({
      phone_number_id,
      display_phone_number: "15550100123",
      waba_id: "102290129340398",
      access_token: TOKEN,
      verified_name: "Acme"
    }))
  })
  baseUrl = simulator.url
})
afterAll(() => simulator.close())

const KEY = generateSecretKey()

/** Core on a fresh memory store, with `key` (default {@link KEY}) and the simulator as Graph API. */
const layerWith = (key: Uint8Array | null = KEY, storage: Layer.Layer<Storage> = MemoryStorage.layer) =>
  Core.layer.pipe(
    Layer.provide(Layer.merge(key === null ? Layer.empty : SecretKey.layer(key), ChannelVerifier.graph({ baseUrl, apiVersion: "v22.0" }))),
    Layer.provideMerge(storage)
  )

const input = (phone_number_id: string, overrides: Partial<ChannelInput> = {}): ChannelInput => ({
  phone_number_id,
  waba_id: "102290129340398",
  access_token: TOKEN,
  ...overrides
})

const withOrganization = Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" }))

describe("secret box (AES-256-GCM)", () => {
  it("seals with a fresh IV each time and opens only under the same key", () => {
    const sealed = sealSecret(KEY, TOKEN)
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/)
    expect(sealed).not.toContain(TOKEN)
    expect(sealSecret(KEY, TOKEN)).not.toBe(sealed)
    expect(openSecret(KEY, sealed)).toEqual(Option.some(TOKEN))
    expect(openSecret(generateSecretKey(), sealed)).toEqual(Option.none())
    const [version, iv, tag, ciphertext] = sealed.split(".")
    const flipped = `${ciphertext!.startsWith("A") ? "B" : "A"}${ciphertext!.slice(1)}`
    expect(openSecret(KEY, [version, iv, tag, flipped].join("."))).toEqual(Option.none())
    expect(openSecret(KEY, "not sealed")).toEqual(Option.none())
  })

  it("reads keys as hex or base64 of exactly 32 bytes, and refuses anything else without repeating it", () => {
    const key = generateSecretKey()
    expect(parseSecretKey(encodeSecretKey(key))).toEqual(Either.right(key))
    expect(parseSecretKey(` ${Buffer.from(key).toString("hex")}\n`)).toEqual(Either.right(key))
    expect(parseSecretKey(Buffer.from(key).toString("base64url"))).toEqual(Either.right(key))
    for (const bad of ["", "short", Buffer.alloc(16).toString("base64"), Buffer.alloc(31).toString("hex"), "z".repeat(64)]) {
      const parsed = parseSecretKey(bad)
      expect(Either.isLeft(parsed), bad).toBe(true)
      if (bad.length > 0) expect(Either.getLeft(parsed).pipe(Option.getOrThrow)).not.toContain(bad)
    }
  })
})

describe("Channels", () => {
  it.live("add verifies through the Graph API, stores the token sealed, and getWithToken opens it", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization
      const channels = yield* Channels
      const before = calls().length
      const channel = yield* channels.add(org.id, input("1001"))
      expect(calls().slice(before)).toEqual([{ url: "/v22.0/1001", authorization: `Bearer ${TOKEN}` }])
      expect(channel.display_phone_number).toBe("+15550100123")
      expect(channel.access_token_last4).toBe("0042")
      const stored = yield* Effect.flatMap(Storage, (storage) => storage.channels.findById(org.id, channel.uuid))
      const sealed = Option.getOrThrow(stored).access_token_sealed
      expect(sealed).not.toContain(TOKEN)
      expect(openSecret(KEY, sealed)).toEqual(Option.some(TOKEN))
      expect(yield* channels.getWithToken(org.id, channel.uuid)).toEqual({ organization_id: org.id, channel, access_token: TOKEN })
      const other = yield* withOrganization
      expect((yield* failureOf(channels.getWithToken(other.id, channel.uuid)))._tag).toBe("RecordNotFound")
    }).pipe(Effect.provide(layerWith())))

  it.live("getWithToken opens a token once, and a token written anew is opened anew (never the old one from memory)", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization
      const channels = yield* Channels
      const channel = yield* channels.add(org.id, input("4001"))
      expect((yield* channels.getWithToken(org.id, channel.uuid)).access_token).toBe(TOKEN)
      expect((yield* channels.getWithToken(org.id, channel.uuid)).access_token).toBe(TOKEN)
      const renewed = "EAAGrenewed-00000000000000000077"
      const storage = yield* Storage
      yield* storage.channels.update(org.id, channel.uuid, {
        access_token: { sealed: sealSecret(KEY, renewed), last4: "0077" },
        updated_at: new Date().toISOString()
      })
      expect((yield* channels.getWithToken(org.id, channel.uuid)).access_token).toBe(renewed)
    }).pipe(Effect.provide(layerWith())))

  it.live("a refusal fails with ChannelVerificationFailed whose message holds Meta's reason but never the token", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization
      // Meta's own messages never echo the token; this one does, so the test sees it cut out.
      simulator.script.enqueue([{ code: 100, message: `Unsupported get request for token ${TOKEN}` }], "lookup")
      const error = yield* failureOf((yield* Channels).add(org.id, input("1002")))
      expect(error._tag).toBe("ChannelVerificationFailed")
      expect(error.message).toContain("Unsupported get request")
      expect(error.message).not.toContain(TOKEN)
      expect(JSON.stringify(error)).not.toContain(TOKEN)
      expect(yield* (yield* Channels).list(org.id)).toEqual([])
    }).pipe(Effect.provide(layerWith())))

  it.live("the default is the first added that still exists; look-ups by phone_number_id and waba_id cross organizations", () =>
    Effect.gen(function* () {
      const channels = yield* Channels
      const org = yield* withOrganization
      const other = yield* withOrganization
      expect(yield* channels.defaultChannel(org.id)).toEqual(Option.none())
      const first = yield* channels.add(org.id, input("2001"))
      const second = yield* channels.add(org.id, input("2002", { waba_id: "9" }))
      const theirs = yield* channels.add(other.id, input("2003", { waba_id: "9" }))
      expect(yield* channels.defaultChannel(org.id)).toEqual(Option.some(first))
      yield* channels.remove(org.id, first.uuid)
      expect(yield* channels.defaultChannel(org.id)).toEqual(Option.some(second))
      expect(yield* channels.findByPhoneNumberId("2003")).toEqual(Option.some({ organization_id: other.id, channel: theirs }))
      expect(yield* channels.findByPhoneNumberId("2001")).toEqual(Option.none())
      expect(yield* channels.findByWabaId("9")).toEqual([
        { organization_id: org.id, channel: second },
        { organization_id: other.id, channel: theirs }
      ])
    }).pipe(Effect.provide(layerWith())))

  it.live("without a key: add, list, remove and getWithToken fail with SecretKeyMissing; look-ups still answer", () =>
    Effect.gen(function* () {
      const channels = yield* Channels
      const org = yield* withOrganization
      const before = calls().length
      expect((yield* failureOf(channels.add(org.id, input("3001"))))._tag).toBe("SecretKeyMissing")
      expect((yield* failureOf(channels.list(org.id)))._tag).toBe("SecretKeyMissing")
      const someUuid = "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a" as Parameters<typeof channels.remove>[1]
      expect((yield* failureOf(channels.remove(org.id, someUuid)))._tag).toBe("SecretKeyMissing")
      expect((yield* failureOf(channels.getWithToken(org.id, someUuid)))._tag).toBe("SecretKeyMissing")
      expect(calls().length).toBe(before)
      expect(yield* channels.findByPhoneNumberId("3001")).toEqual(Option.none())
    }).pipe(Effect.provide(layerWith(null))))

  it.live("another key on a store whose check value was sealed by the first fails the Layer with SecretKeyMismatch", () =>
    Effect.gen(function* () {
      const storage = MemoryStorage.make()
      const shared = Layer.succeed(Storage, storage)
      yield* Effect.flatMap(Channels, (channels) => Effect.flatMap(withOrganization, (org) => channels.add(org.id, input("4001")))).pipe(
        Effect.provide(layerWith(KEY, shared))
      )
      const wrong = yield* Effect.exit(Effect.provide(Channels, layerWith(generateSecretKey(), shared)))
      expect(Exit.isFailure(wrong) && String(wrong.cause)).toContain("SWITCHBOARD_SECRET_KEY")
      expect(Exit.isSuccess(yield* Effect.exit(Effect.provide(Channels, layerWith(KEY, shared))))).toBe(true)
    }))
})
