import { Context, Effect, Layer } from "effect"

/**
 * The in-process wake signal of the leased-dispatch loops (docs/webhooks.md "Delivery and
 * the dispatcher"): whoever enqueues work in this process calls `wake`, and every loop
 * subscribed with `subscribe` claims at once instead of sleeping out its poll interval.
 * Work enqueued by another process is found by that process's signal or by the poll.
 *
 * - `wake`: wakes every subscriber (synchronously; never fails, cheap when none listens);
 * - `unsafeWake` (optional): the same wake as a plain call, for code outside a fiber (the
 *   promise form of a store's record, docs/benchmarks.md "A message without a fiber");
 * - `unsafeWakeAfterSendOutcome` (optional): the wake after a send's outcome was recorded
 *   (a busy dispatcher records hundreds a second), as a plain call: it reaches only the
 *   subscribers that hear send outcomes (absent: `unsafeWake`);
 * - `subscribe(listener, options)`: calls `listener` on every later wake until the returned
 *   function is called; with `{ sendOutcomes: false }`, not on the wakes after a send's
 *   outcome (a loop such an outcome never gives work: the media loop, {@link ignoringSendOutcomes}).
 *
 * @category dispatch
 */
export interface DispatchWakeService {
  readonly wake: Effect.Effect<void>
  readonly unsafeWake?: () => void
  readonly unsafeWakeAfterSendOutcome?: () => void
  readonly subscribe: (listener: () => void, options?: { readonly sendOutcomes?: boolean }) => () => void
}

/**
 * Tag of the {@link DispatchWakeService}. `DispatchWake.layer` is a fresh signal: one per
 * runtime, shared by the storage that enqueues ({@link wakeOnEnqueue}) and the loops.
 *
 * @category dispatch
 */
export class DispatchWake extends Context.Tag("@switchboard/core/DispatchWake")<DispatchWake, DispatchWakeService>() {
  static readonly layer: Layer.Layer<DispatchWake> = Layer.sync(DispatchWake, () => makeDispatchWake())
}

/**
 * A new {@link DispatchWakeService} with no subscriber.
 *
 * @category dispatch
 */
export const makeDispatchWake = (): DispatchWakeService => {
  const listeners = new Set<() => void>()
  // Those of `listeners` that hear the wakes after a send's outcome too.
  const outcomeListeners = new Set<() => void>()
  const unsafeWake = (): void => {
    for (const listener of listeners) listener()
  }
  return {
    wake: Effect.sync(unsafeWake),
    unsafeWake,
    unsafeWakeAfterSendOutcome: () => {
      for (const listener of outcomeListeners) listener()
    },
    subscribe: (listener, options) => {
      const entry = () => listener()
      listeners.add(entry)
      if (options?.sendOutcomes !== false) outcomeListeners.add(entry)
      return () => {
        listeners.delete(entry)
        outcomeListeners.delete(entry)
      }
    }
  }
}

/**
 * `wake` for a loop that a send's recorded outcome never gives work (the media loop: an
 * outcome makes no fetch due): its subscribers skip the wakes after a send's outcome
 * (`subscribe(listener, { sendOutcomes: false })`), each of which would be a claim and a
 * look at the next due time for nothing, about 1 400 in a dispatch of 20 000 messages on
 * PostgreSQL (docs/benchmarks.md "Dispatch on PostgreSQL: the loops woken for nothing").
 *
 * @category dispatch
 */
export const ignoringSendOutcomes = (wake: DispatchWakeService): DispatchWakeService => ({
  ...wake,
  subscribe: (listener) => wake.subscribe(listener, { sendOutcomes: false })
})
