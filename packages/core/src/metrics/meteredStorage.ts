import { Effect, Layer, Option } from "effect"
import type { Broadcast, BroadcastId } from "../model/broadcasts.js"
import type { ChannelId } from "../model/channels.js"
import type { Message } from "../model/messages.js"
import { tappedWithPromise } from "../internal/promiseForm.js"
import type { OrganizationId } from "../model/organizations.js"
import { type OutboxOutcome, tappedRecordSent } from "../storage/OutboxRepository.js"
import { Storage, type StorageService } from "../storage/Storage.js"
import { MetricsRecorder, type MetricsRecorderService } from "./MetricsRecorder.js"

/**
 * The storage of the runtime, with the writes that change a message's status or record a
 * webhook delivery attempt reported to the runtime's {@link MetricsRecorder} once they
 * succeeded (docs/http-adapter.md "Metrics"), from what the store answered, so a
 * duplicate or a report that changed nothing is not counted:
 * - a message appended to a chat, in the status it got (an inbound one `delivered`; an
 *   outbound one `queued`, not at all when claimed at once: its attempt's outcome is);
 * - the send queue's outcome of an attempt (`sent`, also the status pending provider
 *   reports then moved it to; `failed`; `queued` for a retry or a paused channel; an
 *   unknown outcome stays `sending`, not counted), a retry (`queued`), a cancel
 *   (`failed`), a settled unknown outcome;
 * - the provider's status reports that moved a message;
 * - a broadcast's recipients as written (`queued`, or `failed` when skipped), and the
 *   recipients failed by cancelling or stopping it (its `failed` count before and after);
 * - the waiting messages failed by deleting their channel (counted just before);
 * - each recorded webhook delivery attempt, by its result.
 * Everything else is the storage unchanged. Installed only when a recorder is given
 * (the http-adapter's `metrics` option): without it nothing is wrapped.
 *
 * @category metrics
 */
export const meteredStorage: Layer.Layer<Storage, never, Storage> = Layer.effect(
  Storage,
  Effect.gen(function*() {
    const storage = yield* Storage
    const recorder = yield* MetricsRecorder
    return meteredStorageOf(storage, recorder)
  })
)

/** `storage` with its status-changing writes reported to `recorder`. */
const meteredStorageOf = (storage: StorageService, recorder: MetricsRecorderService): StorageService => {
  const outbound = (status: Message["status"], count = 1) => {
    if (count > 0) recorder.messageStatus("outbound", status, count)
  }
  const entered = (message: Message) => {
    if (message.status !== "sending") recorder.messageStatus(message.direction, message.status)
  }
  const failedCount = (organizationId: OrganizationId, id: BroadcastId) =>
    Effect.map(storage.broadcasts.findById(organizationId, id), Option.match({ onNone: () => 0, onSome: (broadcast: Broadcast) => broadcast.counts.failed }))

  return {
    ...storage,
    chats: {
      ...storage.chats,
      appendMessage: (organizationId, request) =>
        Effect.tap(storage.chats.appendMessage(organizationId, request), (outcome) => {
          if (outcome._tag === "Appended") entered(outcome.message)
        }),
      updateMessageStatus: (organizationId, id, update) =>
        Effect.tap(storage.chats.updateMessageStatus(organizationId, id, update), (outcome) => {
          if (outcome._tag === "Updated" && outcome.changed && outcome.message.status === update.status) entered(outcome.message)
        }),
      updateMessageStatusByProviderId: (organizationId, providerMessageId, update) =>
        Effect.tap(storage.chats.updateMessageStatusByProviderId(organizationId, providerMessageId, update), (outcome) => {
          if (outcome._tag === "Updated" && outcome.changed) entered(outcome.message)
        })
    },
    outbox: {
      ...storage.outbox,
      record: tappedWithPromise(storage.outbox.record, (recorded, _id, _lease, outcome) => {
        if (Option.isSome(recorded)) recordOutcome(outcome, recorded.value.status, outbound)
      }),
      ...tappedRecordSent(storage.outbox, (status, _id, _lease, outcome) => {
        if (Option.isSome(status)) recordOutcome(outcome, status.value, outbound)
      }),
      settle: (organizationId, id, settlement) =>
        Effect.tap(storage.outbox.settle(organizationId, id, settlement), (settled) => {
          if (Option.isSome(settled) && settled.value.changed && settled.value.message.status === settlement.status) {
            entered(settled.value.message)
          }
        }),
      retry: (organizationId, id, now, expiresAt) =>
        Effect.tap(storage.outbox.retry(organizationId, id, now, expiresAt), (outcome) => {
          if (outcome._tag === "Done") outbound("queued")
        }),
      cancel: (organizationId, id, failure, now) =>
        Effect.tap(storage.outbox.cancel(organizationId, id, failure, now), (outcome) => {
          if (outcome._tag === "Done") outbound("failed")
        })
    },
    channels: {
      ...storage.channels,
      delete: (organizationId, id: ChannelId) =>
        Effect.flatMap(storage.outbox.channelQueue(organizationId, id), (waiting) =>
          Effect.tap(storage.channels.delete(organizationId, id), (deleted) => {
            if (deleted) outbound("failed", waiting.queued + waiting.sending)
          }))
    },
    broadcasts: {
      ...storage.broadcasts,
      writeRecipients: (organizationId, id, lease, batch) =>
        Effect.tap(storage.broadcasts.writeRecipients(organizationId, id, lease, batch), (written) => {
          if (!written) return
          for (const recipient of batch.recipients) outbound(recipient.message.status)
        }),
      cancel: (organizationId, id, failure, now) =>
        Effect.flatMap(failedCount(organizationId, id), (before) =>
          Effect.tap(storage.broadcasts.cancel(organizationId, id, failure, now), (outcome) => {
            if (outcome._tag === "Done") outbound("failed", outcome.broadcast.counts.failed - before)
          })),
      stop: (organizationId, id, reason, now) =>
        Effect.flatMap(failedCount(organizationId, id), (before) =>
          Effect.tap(storage.broadcasts.stop(organizationId, id, reason, now), (stopped) => {
            if (Option.isSome(stopped)) outbound("failed", stopped.value.counts.failed - before)
          }))
    },
    webhooks: {
      ...storage.webhooks,
      recordAttempt: (deliveryId, lease, attempt) =>
        Effect.tap(storage.webhooks.recordAttempt(deliveryId, lease, attempt), (recorded) => {
          if (!recorded) return
          recorder.webhookDelivery(attempt.delivery_status === "pending" ? "retrying" : attempt.delivery_status)
        })
    }
  }
}

/** The statuses a recorded send-queue outcome moved the message into (`status`: the message's afterwards). */
const recordOutcome = (
  outcome: OutboxOutcome,
  status: Message["status"],
  outbound: (status: Message["status"]) => void
): void => {
  switch (outcome._tag) {
    case "Sent":
      outbound("sent")
      // Provider reports that came before the send recorded its id moved it further.
      if (status !== "sent" && status !== "sending" && status !== "queued") outbound(status)
      return
    case "Failed":
      return outbound("failed")
    case "Requeued":
    case "Paused":
      return outbound("queued")
    case "Unknown":
      return
  }
}
