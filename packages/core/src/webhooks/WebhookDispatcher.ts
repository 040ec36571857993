import { Cause, Clock, Effect, Either, Option, Random } from "effect"
import { SecretKey } from "../channels/SecretKey.js"
import { openSecret } from "../channels/secretBox.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { StorageError } from "../storage/errors.js"
import { Storage } from "../storage/Storage.js"
import type { AttemptRecord, ClaimedDelivery } from "../storage/WebhookRepository.js"
import { DELIVERY_LEASE_MS, DELIVERY_RETENTION_MS } from "./model.js"
import { WebhookSender, type WebhookSendOutcome } from "./WebhookSender.js"
import { WebhookSettings } from "./WebhookSettings.js"

/**
 * The webhook dispatcher (docs/webhooks.md "Delivery and the dispatcher"): it claims due
 * deliveries from the outbox (`WebhookRepository.claimDue`, leased for 60 s to this
 * process, so several processes on one store never send a delivery twice at once), sends
 * each (`WebhookSender`), and records the attempt with the delivery's next state
 * (`recordAttempt`, only while the lease holds). Attempt `n` that fails makes the delivery
 * due again after `retryDelaysMs[n - 1]` plus up to 10% random jitter; the attempt after
 * the last delay that fails makes it `failed`. Deliveries and their attempts older than
 * 30 days are pruned now and then.
 */

/** Most deliveries claimed, and sent in parallel, by one {@link dispatchWebhooksOnce}. */
export const DISPATCH_BATCH_SIZE = 10

/** How often the loop polls the outbox when it found nothing (or less than a batch) due: 1 s. */
export const DISPATCH_POLL_INTERVAL_MS = 1_000

/** How often the loop prunes deliveries older than the retention: every hour (and at its start). */
export const PRUNE_INTERVAL_MS = 3_600_000

/**
 * What one {@link dispatchWebhooksOnce} did: how many deliveries it `claimed`, how many of
 * them were `delivered`, `retrying` (due again later) or `failed` (no attempt left), and
 * how many attempts it could not record (`lost`: another process took the lease over).
 *
 * @category webhooks
 */
export interface DispatchSummary {
  readonly claimed: number
  readonly delivered: number
  readonly retrying: number
  readonly failed: number
  readonly lost: number
}

/**
 * Options of {@link runWebhookDispatcher}: `pollIntervalMs`, the pause between polls when
 * nothing more is due, in milliseconds (default 1 000); `batchSize`, the most deliveries
 * claimed and sent in parallel at once (default 10).
 *
 * @category webhooks
 */
export interface WebhookDispatcherOptions {
  readonly pollIntervalMs?: number
  readonly batchSize?: number
}

/**
 * The state of a delivery after attempt number `attempt` (from 1) ended with `outcome` at
 * `attemptedAtMs` (epoch milliseconds): `delivered`; `pending` again, due after
 * `retryDelaysMs[attempt - 1]` stretched by `jitter` (a fraction in [0, 0.1)); or `failed`
 * when no delay is left.
 *
 * @category webhooks
 */
export const nextDeliveryState = (
  outcome: Pick<WebhookSendOutcome, "delivered">,
  attempt: number,
  attemptedAtMs: number,
  retryDelaysMs: ReadonlyArray<number>,
  jitter: number
): { readonly delivery_status: AttemptRecord["delivery_status"]; readonly next_attempt_at: string | null } => {
  if (outcome.delivered) return { delivery_status: "delivered", next_attempt_at: null }
  const delay = retryDelaysMs[attempt - 1]
  if (delay === undefined) return { delivery_status: "failed", next_attempt_at: null }
  return {
    delivery_status: "pending",
    next_attempt_at: new Date(attemptedAtMs + Math.round(delay * (1 + jitter))).toISOString()
  }
}

/**
 * The plaintext secret of a claimed delivery under `key`, or the attempt error saying why
 * there is none (never the secret itself).
 */
const endpointSecret = (key: Uint8Array | undefined, delivery: ClaimedDelivery) =>
  key === undefined
    ? Either.left("no secret key is configured, so the endpoint secret cannot be opened")
    : Option.match(openSecret(key, delivery.secret_sealed), {
      onNone: () => Either.left("the endpoint secret cannot be opened with the configured secret key"),
      onSome: (secret) => Either.right(secret)
    })

/** One claimed delivery: sent, and its attempt recorded; which state it ended in. */
const deliverOne = (
  delivery: ClaimedDelivery
): Effect.Effect<"delivered" | "retrying" | "failed" | "lost", StorageError, Storage | SecureRandom> =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const random = yield* SecureRandom
    const settings = yield* WebhookSettings
    const sender = yield* WebhookSender
    const attemptedAtMs = yield* Clock.currentTimeMillis
    const { key } = yield* SecretKey
    const secret = endpointSecret(key, delivery)
    const outcome: WebhookSendOutcome = Either.isRight(secret)
      ? yield* sender.send({ url: delivery.url, secret: secret.right, event: delivery.event })
      : { delivered: false, status: null, error: secret.left, duration_ms: 0, response_body: null }
    const jitter = (yield* Random.next) * 0.1
    const next = nextDeliveryState(outcome, delivery.attempt, attemptedAtMs, settings.retryDelaysMs, jitter)
    const recorded = yield* storage.webhooks.recordAttempt(delivery.delivery_id, delivery.lease, {
      attempt_id: yield* random.uuid(),
      delivery_status: next.delivery_status,
      status: outcome.status,
      error: outcome.error,
      duration_ms: outcome.duration_ms,
      response_body: outcome.response_body,
      attempted_at: new Date(attemptedAtMs).toISOString(),
      next_attempt_at: next.next_attempt_at
    })
    if (!recorded) {
      yield* Effect.logWarning("webhook attempt not recorded: the delivery's lease was taken over").pipe(
        Effect.annotateLogs({
          organization_id: delivery.organization_id,
          delivery_id: delivery.delivery_id,
          endpoint_uuid: delivery.endpoint_uuid
        })
      )
      return "lost" as const
    }
    if (!outcome.delivered) {
      yield* Effect.logWarning("webhook attempt failed").pipe(
        Effect.annotateLogs({
          organization_id: delivery.organization_id,
          delivery_id: delivery.delivery_id,
          endpoint_uuid: delivery.endpoint_uuid,
          attempt: delivery.attempt,
          status: outcome.status ?? "none",
          error: outcome.error ?? "none"
        })
      )
    }
    return next.delivery_status === "delivered" ? "delivered" : next.delivery_status === "pending" ? "retrying" : "failed"
  })

/**
 * One round of the dispatcher at `now`: claims up to `batchSize` (default 10) due
 * deliveries, leased until `now` + 60 s, sends them in parallel and records each attempt.
 * Uninterruptible once started, so an interruption waits for the attempts in flight (each
 * at most 10 s). Fails only with the `StorageError` of the claim; a storage error while
 * recording one attempt is logged, and that delivery is claimed again when its lease ends.
 *
 * @category webhooks
 */
export const dispatchWebhooksOnce = (
  now: Date,
  batchSize: number = DISPATCH_BATCH_SIZE
): Effect.Effect<DispatchSummary, StorageError, Storage | SecureRandom> =>
  Effect.uninterruptible(
    Effect.gen(function*() {
      const storage = yield* Storage
      const claimed = yield* storage.webhooks.claimDue(
        now.toISOString(),
        new Date(now.getTime() + DELIVERY_LEASE_MS).toISOString(),
        batchSize
      )
      const results = yield* Effect.forEach(
        claimed,
        (delivery) =>
          deliverOne(delivery).pipe(
            Effect.catchAll((error) =>
              Effect.logWarning("webhook attempt could not be recorded").pipe(
                Effect.annotateLogs({
                  organization_id: delivery.organization_id,
                  delivery_id: delivery.delivery_id,
                  endpoint_uuid: delivery.endpoint_uuid,
                  error: error.message
                }),
                Effect.as("lost" as const)
              )
            )
          ),
        { concurrency: batchSize }
      )
      const count = (state: string) => results.filter((result) => result === state).length
      return {
        claimed: claimed.length,
        delivered: count("delivered"),
        retrying: count("retrying"),
        failed: count("failed"),
        lost: count("lost")
      }
    })
  )

/**
 * Deletes deliveries (and their attempts) created more than 30 days before `now`; how many.
 *
 * @category webhooks
 */
export const pruneWebhookDeliveries = (now: Date): Effect.Effect<number, StorageError, Storage> =>
  Effect.flatMap(Storage, (storage) =>
    storage.webhooks.pruneDeliveries(new Date(now.getTime() - DELIVERY_RETENTION_MS).toISOString()))

/**
 * A pause of `ms` milliseconds on a timer that does not keep the process alive (`unref`):
 * a host that stops serving without stopping the dispatcher still exits.
 */
const pause = (ms: number): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), ms)
    timer.unref?.()
    return Effect.sync(() => clearTimeout(timer))
  })

/** Logs a failure or defect of `effect` as a warning and answers `fallback` (an interruption goes on). */
const survive = <A, E, R>(effect: Effect.Effect<A, E, R>, message: string, fallback: A): Effect.Effect<A, never, R> =>
  Effect.catchAllCause(effect, (cause) =>
    Cause.isInterruptedOnly(cause)
      ? Effect.failCause(cause as Cause.Cause<never>)
      : Effect.logWarning(message).pipe(
        Effect.annotateLogs({ error: describeCause(cause) }),
        Effect.as(fallback)
      ))

/** The message of a cause's main error (a storage error names only its operation). */
const describeCause = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  return error instanceof Error ? error.message : "unknown error"
}

/**
 * The dispatcher's loop; runs until interrupted and never fails: a round
 * ({@link dispatchWebhooksOnce}) right after another while full batches are due, else one
 * every `pollIntervalMs` (default 1 s); prunes old deliveries at the start and every hour.
 * Storage errors (and defects) are logged and the loop goes on. Interrupting it (graceful
 * shutdown) waits for the attempts in flight, then stops. Its pauses do not keep the
 * process alive, and use the real clock (not Effect's `TestClock`).
 *
 * @category webhooks
 */
export const runWebhookDispatcher = (
  options: WebhookDispatcherOptions = {}
): Effect.Effect<never, never, Storage | SecureRandom> =>
  Effect.gen(function*() {
    const pollIntervalMs = options.pollIntervalMs ?? DISPATCH_POLL_INTERVAL_MS
    const batchSize = options.batchSize ?? DISPATCH_BATCH_SIZE
    let lastPruneMs: number | undefined
    while (true) {
      const nowMs = yield* Clock.currentTimeMillis
      if (lastPruneMs === undefined || nowMs - lastPruneMs >= PRUNE_INTERVAL_MS) {
        lastPruneMs = nowMs
        yield* survive(pruneWebhookDeliveries(new Date(nowMs)), "webhook deliveries could not be pruned", 0)
      }
      const summary = yield* survive(
        dispatchWebhooksOnce(new Date(nowMs), batchSize),
        "webhook deliveries could not be dispatched",
        undefined
      )
      if (summary === undefined || summary.claimed < batchSize) yield* pause(pollIntervalMs)
    }
  })
