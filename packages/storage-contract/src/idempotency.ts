import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type IdempotencyClaimRequest, type OrganizationId, Storage } from "@switchboard/core"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { insertOrganization, runner, sharedRunner } from "./support.js"

const { instant } = fixtures

/** A claim at minute `at` for a request creating `resourceUuid`: locked 1 minute, kept 24 hours (1440 minutes). */
const request = (key: string, fingerprint: string, at = 0, resourceUuid = fixtures.uuid()): IdempotencyClaimRequest => ({
  key,
  fingerprint,
  resourceUuid,
  now: instant(at),
  lockedUntil: instant(at + 1),
  expiresAt: instant(at + 1440)
})

const claim = (organizationId: OrganizationId, claimRequest: IdempotencyClaimRequest) =>
  Effect.flatMap(Storage, ({ idempotency }) => idempotency.claim(organizationId, claimRequest))

/** The `Claimed` outcome holding `resourceUuid`. */
const claimed = (resourceUuid: string, takeover = false) => ({ _tag: "Claimed", resourceUuid, takeover }) as const

/**
 * Contract of `Storage.idempotency` (docs/messaging.md "Idempotency-Key"): an atomic
 * insert-if-absent claim per organization and key holding the uuid of what its request
 * creates, completion with the stored response, release, takeover of a claim whose lock
 * passed (answering the first claimant's uuid), expiry after its `expires_at`, pruning.
 * With `options.makeSharedLayers`, also a takeover across two stores over one store.
 */
export const idempotencyContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("idempotency keys", () => {
    it.effect("the first claim holds the key; the same request again is in progress, another is a mismatch", () =>
      run(
        Effect.gen(function* () {
          const { id } = yield* insertOrganization()
          expect(yield* claim(id, request("k1", "fp-a", 0, "uuid-a"))).toEqual(claimed("uuid-a"))
          expect(yield* claim(id, request("k1", "fp-a"))).toEqual({ _tag: "InProgress" })
          expect(yield* claim(id, request("k1", "fp-b"))).toEqual({ _tag: "FingerprintMismatch" })
        })
      )
    )

    it.effect("a completed key replays its status and body to the same request only", () =>
      run(
        Effect.gen(function* () {
          const { idempotency } = yield* Storage
          const { id } = yield* insertOrganization()
          yield* claim(id, request("k1", "fp-a"))
          yield* idempotency.complete(id, "k1", { status: 200, body: '{"status":200}', now: instant(0) })
          expect(yield* claim(id, request("k1", "fp-a", 5))).toEqual({ _tag: "Completed", status: 200, body: '{"status":200}' })
          expect(yield* claim(id, request("k1", "fp-b", 5))).toEqual({ _tag: "FingerprintMismatch" })
        })
      )
    )

    it.effect("a released key can be claimed again, by another request too", () =>
      run(
        Effect.gen(function* () {
          const { idempotency } = yield* Storage
          const { id } = yield* insertOrganization()
          yield* claim(id, request("k1", "fp-a", 0, "uuid-a"))
          yield* idempotency.release(id, "k1")
          expect(yield* claim(id, request("k1", "fp-b", 0, "uuid-b"))).toEqual(claimed("uuid-b"))
        })
      )
    )

    it.effect("release never deletes a completed key", () =>
      run(
        Effect.gen(function* () {
          const { idempotency } = yield* Storage
          const { id } = yield* insertOrganization()
          yield* claim(id, request("k1", "fp-a"))
          yield* idempotency.complete(id, "k1", { status: 200, body: "{}", now: instant(0) })
          yield* idempotency.release(id, "k1")
          expect((yield* claim(id, request("k1", "fp-a")))._tag).toBe("Completed")
        })
      )
    )

    it.effect("a claim whose lock has passed is taken over by the same request, never by another", () =>
      run(
        Effect.gen(function* () {
          const { id } = yield* insertOrganization()
          yield* claim(id, request("k1", "fp-a", 0, "uuid-first"))
          expect(yield* claim(id, request("k1", "fp-b", 2))).toEqual({ _tag: "FingerprintMismatch" })
          // The takeover answers the first claimant's uuid, not its own.
          expect(yield* claim(id, request("k1", "fp-a", 2, "uuid-second"))).toEqual(claimed("uuid-first", true))
          // The takeover holds a new lock.
          expect(yield* claim(id, request("k1", "fp-a", 2))).toEqual({ _tag: "InProgress" })
          // A takeover of the takeover still answers the first uuid.
          expect(yield* claim(id, request("k1", "fp-a", 4, "uuid-third"))).toEqual(claimed("uuid-first", true))
        })
      )
    )

    it.effect("a claim reclaiming an expired record holds its own uuid, which a later takeover answers", () =>
      run(
        Effect.gen(function* () {
          const { id } = yield* insertOrganization()
          yield* claim(id, request("k1", "fp-a", 0, "uuid-old"))
          expect(yield* claim(id, request("k1", "fp-a", 1440, "uuid-new"))).toEqual(claimed("uuid-new"))
          expect(yield* claim(id, request("k1", "fp-a", 1442, "uuid-later"))).toEqual(claimed("uuid-new", true))
        })
      )
    )

    it.effect("after 24 hours a key is forgotten: any request claims it anew", () =>
      run(
        Effect.gen(function* () {
          const { idempotency } = yield* Storage
          const { id } = yield* insertOrganization()
          yield* claim(id, request("k1", "fp-a", 0))
          yield* idempotency.complete(id, "k1", { status: 200, body: "{}", now: instant(0) })
          expect((yield* claim(id, request("k1", "fp-b", 1439)))._tag).toBe("FingerprintMismatch")
          expect(yield* claim(id, request("k1", "fp-b", 1440, "uuid-b"))).toEqual(claimed("uuid-b"))
        })
      )
    )

    it.effect("prune deletes the expired records of every organization and keeps the others", () =>
      run(
        Effect.gen(function* () {
          const { idempotency } = yield* Storage
          const first = yield* insertOrganization()
          const second = yield* insertOrganization()
          yield* claim(first.id, request("old", "fp", 0))
          yield* claim(second.id, request("old", "fp", 10))
          yield* claim(first.id, request("new", "fp", 100))
          yield* idempotency.complete(first.id, "new", { status: 200, body: "{}", now: instant(100) })
          expect(yield* idempotency.prune(instant(1450))).toBe(2)
          expect(yield* claim(first.id, request("new", "fp", 1450))).toEqual({ _tag: "Completed", status: 200, body: "{}" })
          expect(yield* idempotency.prune(instant(1450))).toBe(0)
        })
      )
    )

    it.effect("keys are per organization: the same key in two organizations are two keys", () =>
      run(
        Effect.gen(function* () {
          const first = yield* insertOrganization()
          const second = yield* insertOrganization()
          expect(yield* claim(first.id, request("shared", "fp-a", 0, "uuid-a"))).toEqual(claimed("uuid-a"))
          expect(yield* claim(second.id, request("shared", "fp-b", 0, "uuid-b"))).toEqual(claimed("uuid-b"))
        })
      )
    )

    it.effect("keys are compared exactly: case and every visible character count", () =>
      run(
        Effect.gen(function* () {
          const { id } = yield* insertOrganization()
          expect((yield* claim(id, request("Key-1", "fp")))._tag).toBe("Claimed")
          expect((yield* claim(id, request("key-1", "fp")))._tag).toBe("Claimed")
          expect((yield* claim(id, request("Key-1!", "fp")))._tag).toBe("Claimed")
        })
      )
    )
  })

  const runShared = sharedRunner(options)
  if (runShared !== undefined) {
    describe("idempotency keys: two stores on one store", () => {
      it.effect("a takeover on the other store answers the first claimant's uuid", () =>
        runShared((first, second) =>
          Effect.gen(function* () {
            const { id } = yield* insertOrganization()
            expect(yield* first.idempotency.claim(id, request("k1", "fp-a", 0, "uuid-first"))).toEqual(claimed("uuid-first"))
            expect(yield* second.idempotency.claim(id, request("k1", "fp-a", 0))).toEqual({ _tag: "InProgress" })
            expect(yield* second.idempotency.claim(id, request("k1", "fp-a", 2, "uuid-second"))).toEqual(claimed("uuid-first", true))
            expect(yield* first.idempotency.claim(id, request("k1", "fp-a", 2))).toEqual({ _tag: "InProgress" })
          })
        ))

      it.effect("takeovers racing on both stores: exactly one holds the key, with the first uuid", () =>
        runShared((first, second) =>
          Effect.gen(function* () {
            const { id } = yield* insertOrganization()
            yield* first.idempotency.claim(id, request("k1", "fp-a", 0, "uuid-first"))
            const outcomes = yield* Effect.all(
              Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? first : second).idempotency.claim(id, request("k1", "fp-a", 2))),
              { concurrency: "unbounded" }
            )
            expect(outcomes.filter((outcome) => outcome._tag === "Claimed")).toEqual([claimed("uuid-first", true)])
            expect(outcomes.filter((outcome) => outcome._tag === "InProgress")).toHaveLength(9)
          })
        ))
    })
  }
}
