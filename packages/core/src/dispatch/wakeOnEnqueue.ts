import { Effect, Layer } from "effect"
import { Storage, type StorageService } from "../storage/Storage.js"
import { DispatchWake } from "./DispatchWake.js"
import { tappedWithPromise } from "../internal/promiseForm.js"
import { tappedRecordSent } from "../storage/OutboxRepository.js"

/**
 * The storage of the runtime, with every write that may enqueue a webhook delivery (the
 * list at the top of `WebhookRepository`, and a hand retry of a delivery) followed by a
 * {@link DispatchWake} `wake` once it succeeded, so the webhook loop of this process
 * claims the new delivery at once instead of after its poll interval (docs/webhooks.md
 * "Delivery and the dispatcher"). A write that enqueued nothing wakes the loop too: it
 * then claims nothing; except `broadcasts.completeFinished`, which the broadcasts' loop
 * runs on every pass, and which wakes only when it completed a broadcast (waking the loop
 * that ran it would keep every loop passing while nothing is due). A send's recorded outcome
 * (`outbox.record`, `outbox.recordSent`) wakes with `unsafeWakeAfterSendOutcome`: the loops
 * subscribed with `{ sendOutcomes: false }` do not hear it. Everything else is the storage
 * unchanged.
 *
 * @category dispatch
 */
export const wakeOnEnqueue: Layer.Layer<Storage, never, Storage | DispatchWake> = Layer.effect(
  Storage,
  Effect.gen(function*() {
    const storage = yield* Storage
    const { wake, unsafeWake, unsafeWakeAfterSendOutcome } = yield* DispatchWake
    const wakeNow = unsafeWake ?? (() => Effect.runSync(wake))
    return wakingStorage(storage, wake, wakeNow, unsafeWakeAfterSendOutcome ?? wakeNow)
  })
)

/**
 * `storage` with the enqueuing writes followed by `wake` (`wakeNow`: the same as a plain
 * call), and a send's recorded outcome by `wakeAfterOutcome`.
 */
const wakingStorage = (storage: StorageService, wake: Effect.Effect<void>, wakeNow: () => void, wakeAfterOutcome: () => void): StorageService => {
  const waking = <A extends ReadonlyArray<any>, B, E>(write: (...args: A) => Effect.Effect<B, E>) =>
  (...args: A): Effect.Effect<B, E> => Effect.tap(write(...args), () => wake)
  return {
    ...storage,
    contacts: { ...storage.contacts, importBulk: waking(storage.contacts.importBulk) },
    chats: {
      ...storage.chats,
      appendMessage: waking(storage.chats.appendMessage),
      update: waking(storage.chats.update),
      updateMessageStatus: waking(storage.chats.updateMessageStatus),
      updateMessageStatusByProviderId: waking(storage.chats.updateMessageStatusByProviderId)
    },
    templates: { ...storage.templates, updateStatus: waking(storage.templates.updateStatus) },
    webhooks: { ...storage.webhooks, retryDelivery: waking(storage.webhooks.retryDelivery) },
    channels: { ...storage.channels, delete: waking(storage.channels.delete) },
    outbox: {
      ...storage.outbox,
      // Kept with its promise form: the dispatcher records a sent message through it.
      record: tappedWithPromise(storage.outbox.record, wakeAfterOutcome),
      ...tappedRecordSent(storage.outbox, wakeAfterOutcome),
      settle: waking(storage.outbox.settle),
      retry: waking(storage.outbox.retry),
      cancel: waking(storage.outbox.cancel),
      resumeChannel: waking(storage.outbox.resumeChannel)
    },
    broadcasts: {
      ...storage.broadcasts,
      create: waking(storage.broadcasts.create),
      writeRecipients: waking(storage.broadcasts.writeRecipients),
      cancel: waking(storage.broadcasts.cancel),
      stop: waking(storage.broadcasts.stop),
      // Run by the broadcasts' loop on every pass: woken only by what it completed, else
      // each pass would wake the loop that ran it, and every loop would pass every 200 ms.
      completeFinished: (now) =>
        Effect.tap(storage.broadcasts.completeFinished(now), (completed) => completed.length > 0 ? wake : Effect.void)
    }
  }
}
