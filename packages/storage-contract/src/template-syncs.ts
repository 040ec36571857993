import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Storage, type OrganizationId, type TemplateSync } from "@switchboard/core"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { insertChannel, insertOrganization, runner, sharedRunner, sorted } from "./support.js"

const { instant } = fixtures

/** A record never run, due at `dueAt`, with no lease. */
const fresh = (organizationId: OrganizationId, wabaId: string, dueAt: string): TemplateSync => ({
  organization_id: organizationId,
  waba_id: wabaId,
  next_due_at: dueAt,
  lease: null,
  lease_until: null,
  last_run_at: null,
  last_outcome: null,
  last_error: null
})

const OUTCOME = { added: 3, updated: 1, deleted: 2, unchanged: 40 }

/**
 * Contract of `Storage.templateSyncs` (core's TemplateSyncRepository.ts): one record per
 * organization and WhatsApp Business Account, created due at once with each channel and by
 * `ensureDue`; claims due and unleased records, earliest due first, each to one claimer;
 * `renew` and `record` only while the lease holds; `nextDueAt` counts a leased record from
 * its lease's end.
 */
export const templateSyncsContract = (options: StorageContractOptions): void => {
  const run = runner(options)
  const runShared = sharedRunner(options)

  describe("template syncs", () => {
    it.effect("adding a channel makes its account's record due at the channel's created_at, in the same write", () =>
      run(
        Effect.gen(function* () {
          const { templateSyncs } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          expect(yield* templateSyncs.get(org.id, "111")).toEqual(Option.none())
          yield* insertChannel(org.id, { waba_id: "111", created_at: instant(5), updated_at: instant(5) })
          expect(yield* templateSyncs.get(org.id, "111")).toEqual(Option.some(fresh(org.id, "111", instant(5))))
          // A second number of the account: due at the earlier of the two.
          yield* insertChannel(org.id, { waba_id: "111", created_at: instant(9), updated_at: instant(9) })
          expect(yield* templateSyncs.get(org.id, "111")).toEqual(Option.some(fresh(org.id, "111", instant(5))))
          yield* insertChannel(org.id, { waba_id: "222", created_at: instant(7), updated_at: instant(7) })
          expect(yield* templateSyncs.get(org.id, "222")).toEqual(Option.some(fresh(org.id, "222", instant(7))))
          // The same account in another organization is another record.
          expect(yield* templateSyncs.get(other.id, "111")).toEqual(Option.none())
          yield* insertChannel(other.id, { waba_id: "111", created_at: instant(8), updated_at: instant(8) })
          expect(yield* templateSyncs.get(other.id, "111")).toEqual(Option.some(fresh(other.id, "111", instant(8))))
        })
      ))

    it.effect("a channel refused (phone_number_id taken, limit) writes no record", () =>
      run(
        Effect.gen(function* () {
          const { channels, templateSyncs } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const taken = yield* insertChannel(org.id, { waba_id: "111" })
          const duplicate = fixtures.channelRecord({ phone_number_id: taken.phone_number_id, waba_id: "333" })
          expect((yield* channels.insert(other.id, { channel: duplicate, access_token_sealed: "v1.x" }, 20))._tag).toBe("PhoneNumberIdTaken")
          const limited = fixtures.channelRecord({ waba_id: "444" })
          expect((yield* channels.insert(org.id, { channel: limited, access_token_sealed: "v1.x" }, 1))._tag).toBe("LimitReached")
          expect(yield* templateSyncs.get(other.id, "333")).toEqual(Option.none())
          expect(yield* templateSyncs.get(org.id, "444")).toEqual(Option.none())
        })
      ))

    it.effect("ensureDue creates a record due then, brings a later one forward, never pushes one back", () =>
      run(
        Effect.gen(function* () {
          const { templateSyncs } = yield* Storage
          const org = yield* insertOrganization()
          yield* templateSyncs.ensureDue(org.id, "111", instant(10))
          expect(yield* templateSyncs.get(org.id, "111")).toEqual(Option.some(fresh(org.id, "111", instant(10))))
          yield* templateSyncs.ensureDue(org.id, "111", instant(20))
          expect(Option.map(yield* templateSyncs.get(org.id, "111"), (sync) => sync.next_due_at)).toEqual(Option.some(instant(10)))
          yield* templateSyncs.ensureDue(org.id, "111", instant(3))
          expect(Option.map(yield* templateSyncs.get(org.id, "111"), (sync) => sync.next_due_at)).toEqual(Option.some(instant(3)))
        })
      ))

    it.effect("claim leases the due, unleased records, earliest due first, at most `limit`; a leased one returns when its lease ends", () =>
      run(
        Effect.gen(function* () {
          const { templateSyncs } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          yield* templateSyncs.ensureDue(org.id, "111", instant(3))
          yield* templateSyncs.ensureDue(other.id, "222", instant(1))
          yield* templateSyncs.ensureDue(org.id, "333", instant(2))
          yield* templateSyncs.ensureDue(org.id, "444", instant(50))
          expect(yield* templateSyncs.claim({ now: instant(0), lease: "early", leaseUntil: instant(5), limit: 10 })).toEqual([])
          const first = yield* templateSyncs.claim({ now: instant(10), lease: "a", leaseUntil: instant(20), limit: 2 })
          expect(first).toEqual([
            { ...fresh(other.id, "222", instant(1)), lease: "a", lease_until: instant(20) },
            { ...fresh(org.id, "333", instant(2)), lease: "a", lease_until: instant(20) }
          ])
          const second = yield* templateSyncs.claim({ now: instant(10), lease: "b", leaseUntil: instant(20), limit: 10 })
          expect(second).toEqual([{ ...fresh(org.id, "111", instant(3)), lease: "b", lease_until: instant(20) }])
          expect(yield* templateSyncs.claim({ now: instant(15), lease: "c", leaseUntil: instant(25), limit: 10 })).toEqual([])
          expect(yield* templateSyncs.get(org.id, "111")).toEqual(Option.some({ ...fresh(org.id, "111", instant(3)), lease: "b", lease_until: instant(20) }))
          // The holders' leases ended (a crash): claimable again, under the new lease.
          const again = yield* templateSyncs.claim({ now: instant(20), lease: "d", leaseUntil: instant(30), limit: 10 })
          expect(again.map((sync) => [sync.waba_id, sync.lease, sync.lease_until])).toEqual([
            ["222", "d", instant(30)],
            ["333", "d", instant(30)],
            ["111", "d", instant(30)]
          ])
          expect(yield* templateSyncs.claim({ now: instant(20), lease: "e", leaseUntil: instant(30), limit: 0 })).toEqual([])
        })
      ))

    it.effect("record writes the run and releases the lease only while that lease holds; renew likewise", () =>
      run(
        Effect.gen(function* () {
          const { templateSyncs } = yield* Storage
          const org = yield* insertOrganization()
          yield* templateSyncs.ensureDue(org.id, "111", instant(1))
          yield* templateSyncs.claim({ now: instant(2), lease: "old", leaseUntil: instant(3), limit: 1 })
          expect(yield* templateSyncs.renew(org.id, "111", "old", instant(4))).toBe(true)
          expect(Option.map(yield* templateSyncs.get(org.id, "111"), (sync) => sync.lease_until)).toEqual(Option.some(instant(4)))
          // Lost: another claim took it after the lease ended.
          yield* templateSyncs.claim({ now: instant(5), lease: "new", leaseUntil: instant(9), limit: 1 })
          const result = { next_due_at: instant(400), last_run_at: instant(6), last_outcome: OUTCOME, last_error: null }
          expect(yield* templateSyncs.renew(org.id, "111", "old", instant(20))).toBe(false)
          expect(yield* templateSyncs.record(org.id, "111", "old", result)).toBe(false)
          expect(yield* templateSyncs.get(org.id, "111")).toEqual(Option.some({ ...fresh(org.id, "111", instant(1)), lease: "new", lease_until: instant(9) }))
          expect(yield* templateSyncs.record(org.id, "111", "new", result)).toBe(true)
          const recorded: TemplateSync = { ...fresh(org.id, "111", instant(400)), last_run_at: instant(6), last_outcome: OUTCOME }
          expect(yield* templateSyncs.get(org.id, "111")).toEqual(Option.some(recorded))
          // Released: recording again under it writes nothing; a failed run keeps its error.
          expect(yield* templateSyncs.record(org.id, "111", "new", result)).toBe(false)
          yield* templateSyncs.claim({ now: instant(400), lease: "next", leaseUntil: instant(410), limit: 1 })
          const failed = { next_due_at: instant(800), last_run_at: instant(401), last_outcome: null, last_error: "Meta answered 190: the token expired" }
          expect(yield* templateSyncs.record(org.id, "111", "next", failed)).toBe(true)
          expect(yield* templateSyncs.get(org.id, "111")).toEqual(Option.some({ ...fresh(org.id, "111", instant(800)), ...failed }))
          expect(yield* templateSyncs.record(org.id, "999", "next", failed)).toBe(false)
          expect(yield* templateSyncs.get(org.id, "999")).toEqual(Option.none())
        })
      ))

    it.effect("claimAccount leases one account's record, due or not, unless a lease holds it; no record: false", () =>
      run(
        Effect.gen(function* () {
          const { templateSyncs } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          yield* templateSyncs.ensureDue(org.id, "111", instant(100))
          yield* templateSyncs.ensureDue(other.id, "111", instant(1))
          // Not due yet: leased all the same.
          expect(yield* templateSyncs.claimAccount(org.id, "111", { now: instant(2), lease: "hand", leaseUntil: instant(5) })).toBe(true)
          expect(yield* templateSyncs.get(org.id, "111")).toEqual(Option.some({ ...fresh(org.id, "111", instant(100)), lease: "hand", lease_until: instant(5) }))
          // Held: refused, nothing written; the other organization's record is its own.
          expect(yield* templateSyncs.claimAccount(org.id, "111", { now: instant(4), lease: "loop", leaseUntil: instant(9) })).toBe(false)
          expect(Option.map(yield* templateSyncs.get(org.id, "111"), (sync) => sync.lease)).toEqual(Option.some("hand"))
          expect(Option.map(yield* templateSyncs.get(other.id, "111"), (sync) => sync.lease)).toEqual(Option.some(null))
          // The lease ended: taken.
          expect(yield* templateSyncs.claimAccount(org.id, "111", { now: instant(5), lease: "loop", leaseUntil: instant(9) })).toBe(true)
          expect(yield* templateSyncs.record(org.id, "111", "hand", { next_due_at: instant(400), last_run_at: instant(6), last_outcome: OUTCOME, last_error: null })).toBe(false)
          expect(yield* templateSyncs.claimAccount(org.id, "999", { now: instant(5), lease: "x", leaseUntil: instant(9) })).toBe(false)
          expect(yield* templateSyncs.get(org.id, "999")).toEqual(Option.none())
        })
      ))

    it.effect("nextDueAt: none without records; the earliest due, a leased record from its lease's end", () =>
      run(
        Effect.gen(function* () {
          const { templateSyncs } = yield* Storage
          expect(yield* templateSyncs.nextDueAt()).toEqual(Option.none())
          const org = yield* insertOrganization()
          yield* templateSyncs.ensureDue(org.id, "111", instant(10))
          yield* templateSyncs.ensureDue(org.id, "222", instant(5))
          expect(yield* templateSyncs.nextDueAt()).toEqual(Option.some(instant(5)))
          yield* templateSyncs.claim({ now: instant(6), lease: "a", leaseUntil: instant(30), limit: 1 })
          expect(yield* templateSyncs.nextDueAt()).toEqual(Option.some(instant(10)))
          yield* templateSyncs.claim({ now: instant(11), lease: "b", leaseUntil: instant(20), limit: 1 })
          expect(yield* templateSyncs.nextDueAt()).toEqual(Option.some(instant(20)))
        })
      ))

    if (runShared !== undefined) {
      it.effect("two stores claiming one backlog at once: each record is leased to one of them", () =>
        runShared((first, second) =>
          Effect.gen(function* () {
            const org = yield* insertOrganization()
            const accounts: Array<string> = []
            for (let n = 0; n < 20; n++) {
              const wabaId = String(500 + n)
              accounts.push(wabaId)
              if (n % 2 === 0) yield* insertChannel(org.id, { waba_id: wabaId, created_at: instant(1), updated_at: instant(1) })
              else yield* first.templateSyncs.ensureDue(org.id, wabaId, instant(1))
            }
            const claims = yield* Effect.all(
              [first, second, first, second].map((store, index) =>
                store.templateSyncs.claim({ now: instant(2), lease: `lease-${index}`, leaseUntil: instant(3), limit: 7 })
              ),
              { concurrency: "unbounded" }
            )
            const claimed = claims.flat().map((sync) => sync.waba_id)
            expect(claimed.length).toBe(20)
            expect(sorted(claimed)).toEqual(sorted(accounts))
            // Each record is held by the lease that claimed it, seen alike by both stores.
            for (const [index, batch] of claims.entries()) {
              for (const sync of batch) {
                const held = yield* second.templateSyncs.get(org.id, sync.waba_id)
                expect(Option.map(held, (record) => record.lease)).toEqual(Option.some(`lease-${index}`))
              }
            }
          })
        ))
    }
  })
}
