import { Context, Layer } from "effect"
import type { MessageDirection, MessageStatus } from "../model/messages.js"

/**
 * What became of one attempt of an outgoing webhook delivery, once recorded
 * (docs/webhooks.md "Delivery and the dispatcher"): `delivered` (the endpoint answered
 * 2xx), `retrying` (it failed and is due again later) or `failed` (it failed and no
 * attempt is left).
 *
 * @category metrics
 */
export type WebhookDeliveryResult = "delivered" | "retrying" | "failed"

/**
 * What became of one of Meta's webhook POSTs (docs/whatsapp-webhooks.md):
 * `accepted` (signed, everything in it stored), `accepted_with_refusals` (signed and
 * stored, but some of its parts were refused and kept as refused parts),
 * `invalid_signature` (401, nothing stored) or `error` (the store failed: 500, Meta
 * retries).
 *
 * @category metrics
 */
export type ProviderWebhookResult = "accepted" | "accepted_with_refusals" | "invalid_signature" | "error"

/**
 * Where core reports the events operators count (docs/http-adapter.md "Metrics"). Every
 * method is synchronous, cheap and must not throw; core calls them once per event, after
 * the event is stored. The http-adapter's `prometheusMetrics` implements it with
 * Prometheus counters; the default does nothing.
 *
 * @category metrics
 */
export interface MetricsRecorderService {
  /**
   * `count` messages (default 1) of `direction` entered `status`: outbound ones created
   * `queued` or `failed` (a skipped broadcast recipient), moved by the send queue
   * (`sent`, `failed`, `queued` again for a retry) and by the provider's reports
   * (`sent`, `delivered`, `read`, `failed`); inbound ones received (`delivered`).
   * `sending` (a dispatcher's claim) is not reported.
   */
  readonly messageStatus: (direction: MessageDirection, status: MessageStatus, count?: number) => void
  /** One recorded attempt of an outgoing webhook delivery ended as `result`. */
  readonly webhookDelivery: (result: WebhookDeliveryResult) => void
  /** One of Meta's webhook POSTs ended as `result`. */
  readonly providerWebhook: (result: ProviderWebhookResult) => void
}

/**
 * The recorder that records nothing: what {@link MetricsRecorder} holds when no one
 * provides another.
 *
 * @category metrics
 */
export const NO_METRICS: MetricsRecorderService = {
  messageStatus: () => undefined,
  webhookDelivery: () => undefined,
  providerWebhook: () => undefined
}

/**
 * The {@link MetricsRecorderService} of the runtime (docs/http-adapter.md "Metrics"): a
 * reference that defaults to {@link NO_METRICS}, so no Layer needs to provide it and
 * nothing is counted unless a host does (`MetricsRecorder.layer(recorder)`; the
 * http-adapter's `metrics` option does it). Message statuses and webhook deliveries are
 * counted by the storage {@link meteredStorage} wraps.
 *
 * @category metrics
 * @example
 * import { Layer } from "effect"
 * import { Core, MemoryStorage, MetricsRecorder, meteredStorage } from "@switchboard/core"
 *
 * const recorder = { messageStatus: console.log, webhookDelivery: console.log, providerWebhook: console.log }
 * const live = Core.layer.pipe(
 *   Layer.provide(meteredStorage.pipe(Layer.provide(MemoryStorage.layer))),
 *   Layer.provide(MetricsRecorder.layer(recorder))
 * )
 */
export class MetricsRecorder extends Context.Reference<MetricsRecorder>()("@switchboard/core/MetricsRecorder", {
  defaultValue: (): MetricsRecorderService => NO_METRICS
}) {
  /** `recorder` as the runtime's {@link MetricsRecorder}. */
  static readonly layer = (recorder: MetricsRecorderService): Layer.Layer<MetricsRecorder> =>
    Layer.succeed(MetricsRecorder, recorder)
}
