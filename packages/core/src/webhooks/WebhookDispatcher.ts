import { Clock, Effect, Either, Option, Random } from "effect"
import { decryptionKeysOf, SecretKey } from "../common/SecretKey.js"
import { describeCause } from "../internal/describeCause.js"
import type { DispatchWakeService } from "../dispatch/DispatchWake.js"
import {
  DRAIN_MARGIN_MS,
  type LeasedJobEnd,
  type LeasedLoopStatus,
  type LeasedQueue,
  runLeasedPass,
  runLeasedQueue
} from "../dispatch/LeasedQueue.js"
import { openSecret } from "../common/secretBox.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { StorageError } from "../storage/errors.js"
import { Storage } from "../storage/Storage.js"
import type { AttemptRecord, ClaimedDelivery } from "../storage/WebhookRepository.js"
import { DELIVERY_LEASE_MS, DELIVERY_RETENTION_MS, DELIVERY_TIMEOUT_MS, previousSecretSigns } from "../model/webhooks.js"
import { WebhookSender, type WebhookSendOutcome } from "./WebhookSender.js"
import { WebhookSettings } from "./WebhookSettings.js"

/**
 * The webhook dispatcher (docs/webhooks.md "Delivery and the dispatcher"): the webhook
 * deliveries as a {@link LeasedQueue}, run by the one leased-dispatch loop
 * (`runLeasedQueue`). It claims due deliveries from the outbox
 * (`WebhookRepository.claimDue`, leased for 60 s to this process, so several processes on
 * one store never send a delivery twice at once), sends each (`WebhookSender`), and
 * records the attempt with the delivery's next state (`recordAttempt`, only while the
 * lease holds). Attempt `n` that fails makes the delivery due again after
 * `retryDelaysMs[n - 1]` plus up to 10% random jitter; the attempt after the last delay
 * that fails makes it `failed`. Deliveries and their attempts older than 30 days are
 * pruned now and then.
 */

/** Most deliveries claimed, and sent in parallel, by one {@link dispatchWebhooksOnce}. */
export const DISPATCH_BATCH_SIZE = 10

/** Most deliveries the loop keeps in flight at once (default of {@link WebhookDispatcherOptions}): 10. */
export const DISPATCH_CONCURRENCY = 10

/**
 * The longest sleep of the loop when no delivery is known to be due: 1 s. Deliveries
 * written in this process wake it at once; a retry it scheduled wakes it when due.
 */
export const DISPATCH_POLL_INTERVAL_MS = 1_000

/**
 * The least time between two claims of the loop, in ms: 50. A wake (or a delivery's end)
 * that comes sooner after the last claim waits for the rest of it, so a burst of writes
 * that may enqueue events (every status notification of Meta's webhooks wakes the loop,
 * whether or not an endpoint subscribes) costs one claim every 50 ms instead of one per
 * write; a wake after a quieter moment still claims at once.
 */
export const DISPATCH_CLAIM_INTERVAL_MS = 50

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
 * Options of {@link runWebhookDispatcher}: `pollIntervalMs`, the longest sleep when no
 * delivery is known to be due, in milliseconds (default 1 000); `concurrency`, the most
 * deliveries in flight at once (default 10; a slot is refilled as soon as its delivery
 * ends); `wake`, the in-process signal that makes the loop claim at once (the handler's
 * `DispatchWake`, woken by every write that may enqueue a delivery); `status`, where the
 * loop writes when it last ended a pass.
 *
 * @category webhooks
 */
export interface WebhookDispatcherOptions {
  readonly pollIntervalMs?: number
  readonly concurrency?: number
  readonly wake?: DispatchWakeService
  readonly status?: LeasedLoopStatus
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
 * The plaintext secrets of a claimed delivery under the configured keys (any of them
 * opens): the current one, and the previous one while it still signs at `now` (its
 * overlap after a rotation); or the attempt error saying why there is none (never a
 * secret itself). A previous secret that cannot be opened is left out: the current one signs.
 */
const endpointSecrets = (
  keys: ReadonlyArray<Uint8Array>,
  delivery: ClaimedDelivery,
  now: string
): Either.Either<{ readonly secret: string; readonly previous_secret: string | undefined }, string> => {
  if (keys.length === 0) return Either.left("no secret key is configured, so the endpoint secret cannot be opened")
  const secret = openSecret(keys, delivery.secret_sealed)
  if (Option.isNone(secret)) return Either.left("the endpoint secret cannot be opened with the configured secret key")
  const previous =
    delivery.previous_secret_sealed !== null && previousSecretSigns(delivery.previous_secret_expires_at, now)
      ? Option.getOrUndefined(openSecret(keys, delivery.previous_secret_sealed))
      : undefined
  return Either.right({ secret: secret.value, previous_secret: previous })
}

/**
 * What one attempt of a claimed delivery produced: the sender's `outcome`, when it began
 * (`attemptedAtMs`, epoch ms) and the delivery's `next` state.
 *
 * @category webhooks
 */
export interface DeliveryAttemptOutcome {
  readonly outcome: WebhookSendOutcome
  readonly attemptedAtMs: number
  readonly next: ReturnType<typeof nextDeliveryState>
}

/** One attempt of a claimed delivery: sent (unless its secret cannot be opened) and its next state. */
const attemptDelivery = (delivery: ClaimedDelivery): Effect.Effect<DeliveryAttemptOutcome> =>
  Effect.gen(function*() {
    const settings = yield* WebhookSettings
    const sender = yield* WebhookSender
    const attemptedAtMs = yield* Clock.currentTimeMillis
    const secrets = endpointSecrets(decryptionKeysOf(yield* SecretKey), delivery, new Date(attemptedAtMs).toISOString())
    const outcome: WebhookSendOutcome = Either.isRight(secrets)
      ? yield* sender.send({
        url: delivery.url,
        secret: secrets.right.secret,
        ...(secrets.right.previous_secret === undefined ? {} : { previous_secret: secrets.right.previous_secret }),
        event: delivery.event
      })
      : { delivered: false, status: null, error: secrets.left, duration_ms: 0, response_body: null }
    const jitter = (yield* Random.next) * 0.1
    const next = nextDeliveryState(outcome, delivery.attempt, attemptedAtMs, settings.retryDelaysMs, jitter)
    return { outcome, attemptedAtMs, next }
  })

/** Records an attempt while the delivery's lease holds, logging a failed attempt or a lost lease. */
const recordDelivery = (
  delivery: ClaimedDelivery,
  { attemptedAtMs, next, outcome }: DeliveryAttemptOutcome
): Effect.Effect<boolean, StorageError, Storage | SecureRandom> =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const random = yield* SecureRandom
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
    const annotations = {
      organization_id: delivery.organization_id,
      delivery_id: delivery.delivery_id,
      endpoint_uuid: delivery.endpoint_uuid
    }
    if (!recorded) {
      yield* Effect.logWarning("webhook attempt not recorded: the delivery's lease was taken over").pipe(
        Effect.annotateLogs(annotations)
      )
    } else if (!outcome.delivered) {
      yield* Effect.logWarning("webhook attempt failed").pipe(
        Effect.annotateLogs({
          ...annotations,
          attempt: delivery.attempt,
          status: outcome.status ?? "none",
          error: outcome.error ?? "none"
        })
      )
    }
    return recorded
  })

/**
 * The webhook deliveries as a {@link LeasedQueue}: `claim` is `WebhookRepository.claimDue`,
 * `run` one signed POST (`WebhookSender`), `record` `recordAttempt` under the claim's lease
 * token; a retried delivery is due again at its `next_attempt_at`.
 *
 * @category webhooks
 */
export const webhookDeliveryQueue: LeasedQueue<
  ClaimedDelivery,
  DeliveryAttemptOutcome,
  StorageError,
  Storage | SecureRandom
> = {
  name: "webhook dispatcher",
  claim: (now, leaseUntil, limit) =>
    Effect.flatMap(Storage, (storage) =>
      storage.webhooks.claimDue(new Date(now).toISOString(), new Date(leaseUntil).toISOString(), limit)),
  run: attemptDelivery,
  record: recordDelivery,
  dueAgainAt: ({ next }) => next.next_attempt_at === null ? null : Date.parse(next.next_attempt_at),
  span: {
    name: "WebhookDispatcher.deliver",
    attributes: (claimed) => ({
      "switchboard.organization_id": claimed.organization_id,
      "switchboard.webhook_endpoint_id": claimed.endpoint_uuid,
      "switchboard.delivery_attempt": claimed.attempt
    })
  }
}

/** The state a delivery ended in after one job of the queue. */
const endState = (end: LeasedJobEnd<DeliveryAttemptOutcome>): "delivered" | "retrying" | "failed" | "lost" =>
  end._tag !== "Recorded"
    ? "lost"
    : end.outcome.next.delivery_status === "delivered"
      ? "delivered"
      : end.outcome.next.delivery_status === "pending"
        ? "retrying"
        : "failed"

/**
 * One pass of the webhook queue at `now` (`runLeasedPass`): claims up to `batchSize`
 * (default 10) due deliveries, leased until `now` + 60 s, sends them in parallel and
 * records each attempt. Uninterruptible once started, so an interruption waits for the
 * attempts in flight (each at most 10 s). Fails only with the `StorageError` of the
 * claim; a storage error while recording one attempt is logged, and that delivery is
 * claimed again when its lease ends. The loop ({@link runWebhookDispatcher}) does not use
 * it: it is for a host or a test that dispatches step by step.
 *
 * @category webhooks
 */
export const dispatchWebhooksOnce = (
  now: Date,
  batchSize: number = DISPATCH_BATCH_SIZE
): Effect.Effect<DispatchSummary, StorageError, Storage | SecureRandom> =>
  Effect.map(runLeasedPass(webhookDeliveryQueue, now.getTime(), DELIVERY_LEASE_MS, batchSize), (ends) => {
    const states = ends.map(endState)
    const count = (state: string) => states.filter((result) => result === state).length
    return {
      claimed: ends.length,
      delivered: count("delivered"),
      retrying: count("retrying"),
      failed: count("failed"),
      lost: count("lost")
    }
  })

/**
 * Deletes deliveries (and their attempts) created more than 30 days before `now`; how many.
 *
 * @category webhooks
 */
export const pruneWebhookDeliveries = (now: Date): Effect.Effect<number, StorageError, Storage> =>
  Effect.flatMap(Storage, (storage) =>
    storage.webhooks.pruneDeliveries(new Date(now.getTime() - DELIVERY_RETENTION_MS).toISOString()))

/** Prunes old deliveries now and every hour after (Effect's `Clock`); a failure is logged. */
const pruneForever: Effect.Effect<never, never, Storage> = Effect.forever(
  Effect.gen(function*() {
    const nowMs = yield* Clock.currentTimeMillis
    yield* pruneWebhookDeliveries(new Date(nowMs)).pipe(
      Effect.catchAllCause((cause) =>
        Effect.logWarning("webhook deliveries could not be pruned").pipe(
          Effect.annotateLogs({ error: describeCause(cause) })
        )
      )
    )
    yield* Effect.sleep(PRUNE_INTERVAL_MS)
  })
)

/**
 * The dispatcher's loop: {@link webhookDeliveryQueue} run by `runLeasedQueue`, with at
 * most `concurrency` (default 10) deliveries in flight, refilled as each ends, and at most
 * one claim every {@link DISPATCH_CLAIM_INTERVAL_MS} (50 ms); it sleeps until the earliest
 * of `pollIntervalMs` (default 1 s), a wake of `options.wake` and the next retry it
 * scheduled. Prunes old deliveries at its start and every hour. Runs until
 * interrupted and never fails: storage errors (and defects) are logged and the loop goes
 * on. Interrupting it (graceful shutdown) claims nothing more and waits for the attempts
 * in flight to be recorded, for at most the delivery timeout + `DRAIN_MARGIN_MS` (12 s),
 * then stops (an attempt still running then is interrupted unrecorded: its delivery is
 * sent again once its lease ends). Time is Effect's `Clock`.
 *
 * @category webhooks
 */
export const runWebhookDispatcher = (
  options: WebhookDispatcherOptions = {}
): Effect.Effect<never, never, Storage | SecureRandom> =>
  Effect.scoped(
    Effect.zipRight(
      Effect.forkScoped(pruneForever),
      runLeasedQueue(webhookDeliveryQueue, {
        leaseMs: DELIVERY_LEASE_MS,
        concurrency: options.concurrency ?? DISPATCH_CONCURRENCY,
        pollIntervalMs: options.pollIntervalMs ?? DISPATCH_POLL_INTERVAL_MS,
        claimIntervalMs: DISPATCH_CLAIM_INTERVAL_MS,
        drainMs: DELIVERY_TIMEOUT_MS + DRAIN_MARGIN_MS,
        ...(options.wake === undefined ? {} : { wake: options.wake }),
        ...(options.status === undefined ? {} : { status: options.status })
      })
    )
  )
