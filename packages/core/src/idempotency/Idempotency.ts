import { Clock, Context, Effect, Layer } from "effect"
import type { OrganizationId } from "../model/organizations.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { StorageError } from "../storage/errors.js"
import type { IdempotencyClaimOutcome } from "../storage/IdempotencyRepository.js"
import { Storage } from "../storage/Storage.js"
import { IDEMPOTENCY_LOCK_MS, IDEMPOTENCY_RECORD_TTL_MS } from "../model/idempotency.js"

/**
 * Idempotency keys (docs/messaging.md "Idempotency-Key"): a request that carries a key
 * claims it, runs, and completes it with its response, which later requests with the same
 * key and fingerprint get again; a request that does not finish with a stored response
 * releases it. The record holds the uuid of what its request creates (a send's message),
 * chosen here at the claim, so a takeover after a crash answers that resource instead of
 * creating another. Times come from Effect's `Clock`, uuids from `SecureRandom`.
 *
 * @category services
 */
export interface IdempotencyService {
  /**
   * Claims `key` for a request with `fingerprint` (any string identifying the request, for
   * example a SHA-256 of its method, path and body): the claim holds 60 s and the record
   * 24 hours. Expired records are pruned at most once a minute, from here.
   *
   * The uuid of what the request creates is chosen here (a fresh one from `SecureRandom`,
   * so every caller gets one and none can forget it) and stored with the claim: `Claimed`
   * carries `resourceUuid`, the request's own on a fresh claim, the first claimant's on a
   * takeover (`takeover: true`); the caller creates its resource with exactly that uuid and,
   * on a takeover, answers the resource when it already exists. A caller that creates
   * nothing with a uuid (`POST /contacts/bulk`) ignores it.
   */
  readonly claim: (
    organizationId: OrganizationId,
    key: string,
    fingerprint: string
  ) => Effect.Effect<IdempotencyClaimOutcome, StorageError>
  /** Stores the response (HTTP `status`, envelope JSON `body`) of the request holding `key`. */
  readonly complete: (
    organizationId: OrganizationId,
    key: string,
    response: { readonly status: number; readonly body: string }
  ) => Effect.Effect<void, StorageError>
  /** Gives `key` back: the request holding it ended without a response to replay. */
  readonly release: (organizationId: OrganizationId, key: string) => Effect.Effect<void, StorageError>
}

/**
 * Tag of the {@link IdempotencyService}; `Idempotency.layer` needs `Storage` and `SecureRandom`.
 *
 * @category services
 * @example
 * import { Effect } from "effect"
 * import { Idempotency, type OrganizationId } from "@switchboard/core"
 *
 * const once = (organizationId: OrganizationId, key: string) =>
 *   Effect.flatMap(Idempotency, (idempotency) => idempotency.claim(organizationId, key, "POST /send abc…"))
 */
export class Idempotency extends Context.Tag("@switchboard/core/Idempotency")<Idempotency, IdempotencyService>() {
  static readonly layer: Layer.Layer<Idempotency, never, Storage | SecureRandom> = Layer.effect(
    Idempotency,
    Effect.suspend(() => make)
  )
}

const PRUNE_EVERY_MS = 60_000

const make = Effect.gen(function* () {
  const storage = yield* Storage
  const random = yield* SecureRandom
  let prunedAt = Number.NEGATIVE_INFINITY

  const pruneNow = (now: number) =>
    now - prunedAt < PRUNE_EVERY_MS
      ? Effect.void
      : Effect.suspend(() => {
          prunedAt = now
          return Effect.asVoid(storage.idempotency.prune(new Date(now).toISOString()))
        })

  const claim = Effect.fn("Idempotency.claim")(function* (organizationId: OrganizationId, key: string, fingerprint: string) {
    const now = yield* Clock.currentTimeMillis
    yield* pruneNow(now)
    return yield* storage.idempotency.claim(organizationId, {
      key,
      fingerprint,
      resourceUuid: yield* random.uuid(),
      now: new Date(now).toISOString(),
      lockedUntil: new Date(now + IDEMPOTENCY_LOCK_MS).toISOString(),
      expiresAt: new Date(now + IDEMPOTENCY_RECORD_TTL_MS).toISOString()
    })
  })

  const complete = Effect.fn("Idempotency.complete")(function* (
    organizationId: OrganizationId,
    key: string,
    response: { readonly status: number; readonly body: string }
  ) {
    const now = yield* Clock.currentTimeMillis
    yield* storage.idempotency.complete(organizationId, key, { ...response, now: new Date(now).toISOString() })
  })

  return Idempotency.of({
    claim,
    complete,
    release: (organizationId, key) => storage.idempotency.release(organizationId, key)
  })
})
