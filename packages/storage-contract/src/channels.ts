import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type Channel, type ChannelId, type OrganizationId, Storage } from "@switchboard/core"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { insertChannel, insertOrganization, runner, sorted } from "./support.js"

const { instant } = fixtures

/**
 * Contract of `Storage.channels` (docs/channels.md): `phone_number_id` unique across every
 * organization, the per-organization limit checked atomically with the insert, lists
 * oldest first, the cross-organization look-ups, tenant isolation of reads, updates and
 * deletes, `throughput_mps` stored as given, an update writing the given fields together,
 * and the secret-key check value claimed once.
 */
export const channelsContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("channels", () => {
    it.effect("inserts a channel and reads it back by uuid, by phone_number_id and in the list, with its sealed token", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id, {}, "v1.iv.tag.ciphertext")
          const stored = { organization_id: org.id, channel, access_token_sealed: "v1.iv.tag.ciphertext" }
          expect(yield* channels.findById(org.id, channel.uuid)).toEqual(Option.some(stored))
          expect(yield* channels.findByPhoneNumberId(channel.phone_number_id)).toEqual(Option.some(stored))
          expect(yield* channels.list(org.id)).toEqual([channel])
          expect(yield* channels.findByPhoneNumberId("1")).toEqual(Option.none())
        })
      ))

    it.effect("look-ups by phone_number_id asked together each answer their own number's channel", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          const [first, second] = [yield* insertOrganization(), yield* insertOrganization()]
          const a = yield* insertChannel(first.id)
          const b = yield* insertChannel(second.id)
          const asked = [b.phone_number_id, "1", a.phone_number_id, b.phone_number_id]
          const found = yield* Effect.all(asked.map((number) => channels.findByPhoneNumberId(number)), { concurrency: "unbounded" })
          expect(found.map((owner) => Option.map(owner, (stored) => [stored.organization_id, stored.channel.uuid]))).toEqual([
            Option.some([second.id, b.uuid]),
            Option.none(),
            Option.some([first.id, a.uuid]),
            Option.some([second.id, b.uuid])
          ])
        })
      ))

    it.effect("lists oldest first (created_at, then uuid), only the organization's own", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const newer = yield* insertChannel(org.id, { created_at: instant(500), updated_at: instant(500) })
          const older = yield* insertChannel(org.id, { created_at: instant(400), updated_at: instant(400) })
          const tieB = yield* insertChannel(org.id, { uuid: "00000000-0000-4000-8000-ffffffffff02" as ChannelId, created_at: instant(600) })
          const tieA = yield* insertChannel(org.id, { uuid: "00000000-0000-4000-8000-ffffffffff01" as ChannelId, created_at: instant(600) })
          yield* insertChannel(other.id)
          expect((yield* channels.list(org.id)).map((c) => c.uuid)).toEqual([older.uuid, newer.uuid, tieA.uuid, tieB.uuid])
          expect(yield* channels.list(fixtures.uuid() as OrganizationId)).toEqual([])
        })
      ))

    it.effect("insert → PhoneNumberIdTaken for a phone_number_id of any organization; nothing written", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const first = yield* insertChannel(org.id)
          for (const owner of [org.id, other.id]) {
            const again = fixtures.channelRecord({ phone_number_id: first.phone_number_id })
            expect(yield* channels.insert(owner, { channel: again, access_token_sealed: "x" }, 20)).toEqual({ _tag: "PhoneNumberIdTaken" })
            expect(yield* channels.findById(owner, again.uuid)).toEqual(Option.none())
          }
          expect((yield* channels.list(org.id)).length + (yield* channels.list(other.id)).length).toBe(1)
        })
      ))

    it.effect("insert → LimitReached at the limit, per organization; a delete frees a slot", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const first = yield* insertChannel(org.id)
          yield* insertChannel(org.id)
          const third = fixtures.channelRecord()
          expect(yield* channels.insert(org.id, { channel: third, access_token_sealed: "x" }, 2)).toEqual({ _tag: "LimitReached", limit: 2 })
          expect(yield* channels.findById(org.id, third.uuid)).toEqual(Option.none())
          expect((yield* channels.insert(other.id, { channel: fixtures.channelRecord(), access_token_sealed: "x" }, 2))._tag).toBe("Inserted")
          expect(yield* channels.delete(org.id, first.uuid)).toBe(true)
          expect((yield* channels.insert(org.id, { channel: third, access_token_sealed: "x" }, 2))._tag).toBe("Inserted")
          expect((yield* channels.list(org.id)).length).toBe(2)
        })
      ))

    it.effect("concurrent inserts never pass the limit", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          const org = yield* insertOrganization()
          const outcomes = yield* Effect.all(
            Array.from({ length: 8 }, () => channels.insert(org.id, { channel: fixtures.channelRecord(), access_token_sealed: "x" }, 3)),
            { concurrency: "unbounded" }
          )
          expect(outcomes.filter((o) => o._tag === "Inserted").length).toBe(3)
          expect((yield* channels.list(org.id)).length).toBe(3)
        })
      ))

    it.effect("delete → false for an unknown uuid or another organization's channel, which stays", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          expect(yield* channels.delete(other.id, channel.uuid)).toBe(false)
          expect(yield* channels.findById(other.id, channel.uuid)).toEqual(Option.none())
          expect(yield* channels.delete(org.id, fixtures.uuid() as ChannelId)).toBe(false)
          expect(yield* channels.list(org.id)).toEqual([channel])
          expect(yield* channels.delete(org.id, channel.uuid)).toBe(true)
          expect(yield* channels.findByPhoneNumberId(channel.phone_number_id)).toEqual(Option.none())
          expect(yield* channels.delete(org.id, channel.uuid)).toBe(false)
        })
      ))

    it.effect("findByWabaId answers every organization's channels of that account, oldest first", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const later = yield* insertChannel(org.id, { waba_id: "555", created_at: instant(900) })
          const earlier = yield* insertChannel(other.id, { waba_id: "555", created_at: instant(800) })
          yield* insertChannel(org.id, { waba_id: "777" })
          const found = yield* channels.findByWabaId("555")
          expect(found.map((s) => [s.organization_id, s.channel.uuid])).toEqual([
            [other.id, earlier.uuid],
            [org.id, later.uuid]
          ])
          expect(sorted(found.map((s) => s.access_token_sealed))).toEqual(["v1.sealed", "v1.sealed"])
          expect(yield* channels.findByWabaId("999")).toEqual([])
        })
      ))

    it.effect("stores throughput_mps as given and reads it back everywhere", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id, { throughput_mps: 1000, waba_id: "4242" })
          expect(Option.map(yield* channels.findById(org.id, channel.uuid), (s) => s.channel.throughput_mps)).toEqual(Option.some(1000))
          expect((yield* channels.list(org.id))[0]?.throughput_mps).toBe(1000)
          expect(Option.map(yield* channels.findByPhoneNumberId(channel.phone_number_id), (s) => s.channel.throughput_mps)).toEqual(Option.some(1000))
          expect((yield* channels.findByWabaId("4242"))[0]?.channel.throughput_mps).toBe(1000)
        })
      ))

    it.effect("update writes the given fields with updated_at and answers the channel; the others stay", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id, {}, "v1.old")
          const throughput = yield* channels.update(org.id, channel.uuid, { throughput_mps: 7, updated_at: instant(700) })
          const afterThroughput = { ...channel, throughput_mps: 7, updated_at: instant(700) }
          expect(throughput).toEqual(Option.some(afterThroughput))
          expect(yield* channels.findById(org.id, channel.uuid)).toEqual(
            Option.some({ organization_id: org.id, channel: afterThroughput, access_token_sealed: "v1.old" })
          )
          const both = yield* channels.update(org.id, channel.uuid, {
            throughput_mps: 900,
            access_token: { sealed: "v1.new", last4: "9876" },
            updated_at: instant(800)
          })
          const afterBoth = { ...channel, throughput_mps: 900, access_token_last4: "9876", updated_at: instant(800) }
          expect(both).toEqual(Option.some(afterBoth))
          expect(yield* channels.findById(org.id, channel.uuid)).toEqual(
            Option.some({ organization_id: org.id, channel: afterBoth, access_token_sealed: "v1.new" })
          )
          const tokenOnly = yield* channels.update(org.id, channel.uuid, { access_token: { sealed: "v1.third", last4: "3333" }, updated_at: instant(900) })
          expect(Option.map(tokenOnly, (c) => [c.throughput_mps, c.access_token_last4])).toEqual(Option.some([900, "3333"]))
        })
      ))

    it.effect("update → None for an unknown uuid or another organization's channel, which stays unchanged", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const change = { throughput_mps: 3, access_token: { sealed: "v1.stolen", last4: "0000" }, updated_at: instant(999) }
          expect(yield* channels.update(other.id, channel.uuid, change)).toEqual(Option.none())
          expect(yield* channels.update(org.id, fixtures.uuid() as ChannelId, change)).toEqual(Option.none())
          expect(yield* channels.findById(org.id, channel.uuid)).toEqual(
            Option.some({ organization_id: org.id, channel, access_token_sealed: "v1.sealed" })
          )
        })
      ))

    it.effect("the secret-key check value: none at first, then the first claim's value for good", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          expect(yield* channels.secretKeyCheck()).toEqual(Option.none())
          expect(yield* channels.claimSecretKeyCheck("first")).toBe("first")
          expect(yield* channels.claimSecretKeyCheck("second")).toBe("first")
          expect(yield* channels.secretKeyCheck()).toEqual(Option.some("first"))
        })
      ))

    it.effect("resealSecretKeyCheck replaces the check value only while it is the expected one", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          expect(yield* channels.resealSecretKeyCheck("first", "second")).toBe(false)
          expect(yield* channels.secretKeyCheck()).toEqual(Option.none())
          yield* channels.claimSecretKeyCheck("first")
          expect(yield* channels.resealSecretKeyCheck("other", "second")).toBe(false)
          expect(yield* channels.resealSecretKeyCheck("first", "second")).toBe(true)
          expect(yield* channels.secretKeyCheck()).toEqual(Option.some("second"))
          expect(yield* channels.resealSecretKeyCheck("first", "third")).toBe(false)
          expect(yield* channels.claimSecretKeyCheck("fourth")).toBe("second")
        })
      ))

    it.effect("listSealedTokens pages every organization's channels by uuid; resealToken is a compare-and-set, the rest of the channel kept", () =>
      run(
        Effect.gen(function* () {
          const { channels } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const a = yield* insertChannel(org.id, { uuid: "00000000-0000-4000-8000-00000000000a" as ChannelId }, "sealed-a")
          const b = yield* insertChannel(other.id, { uuid: "00000000-0000-4000-8000-00000000000b" as ChannelId }, "sealed-b")
          const c = yield* insertChannel(org.id, { uuid: "00000000-0000-4000-8000-00000000000c" as ChannelId }, "sealed-c")
          expect(yield* channels.listSealedTokens(null, 2)).toEqual([
            { uuid: a.uuid, access_token_sealed: "sealed-a" },
            { uuid: b.uuid, access_token_sealed: "sealed-b" }
          ])
          expect(yield* channels.listSealedTokens(b.uuid, 2)).toEqual([{ uuid: c.uuid, access_token_sealed: "sealed-c" }])
          expect(yield* channels.listSealedTokens(c.uuid, 2)).toEqual([])
          // Read by phone number first (a store caching that look-up now holds the old text).
          expect(Option.map(yield* channels.findByPhoneNumberId(b.phone_number_id), (stored) => stored.access_token_sealed)).toEqual(
            Option.some("sealed-b")
          )
          expect(yield* channels.resealToken(b.uuid, "stale", "x")).toBe(false)
          expect(yield* channels.resealToken(b.uuid, "sealed-b", "resealed-b")).toBe(true)
          expect(yield* channels.resealToken(b.uuid, "sealed-b", "again")).toBe(false)
          expect(yield* channels.resealToken(fixtures.uuid() as ChannelId, "sealed-a", "x")).toBe(false)
          expect(yield* channels.findById(other.id, b.uuid)).toEqual(
            Option.some({ organization_id: other.id, channel: b, access_token_sealed: "resealed-b" })
          )
          // A look-up by phone number (cached by some stores) sees the new sealed token at once.
          expect(Option.map(yield* channels.findByPhoneNumberId(b.phone_number_id), (stored) => stored.access_token_sealed)).toEqual(
            Option.some("resealed-b")
          )
          expect(yield* channels.findById(org.id, a.uuid)).toEqual(Option.some({ organization_id: org.id, channel: a, access_token_sealed: "sealed-a" }))
        })
      ))
  })
}
