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
 * - `subscribe(listener)`: calls `listener` on every later wake until the returned
 *   function is called.
 *
 * @category dispatch
 */
export interface DispatchWakeService {
  readonly wake: Effect.Effect<void>
  readonly unsafeWake?: () => void
  readonly subscribe: (listener: () => void) => () => void
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
  const unsafeWake = (): void => {
    for (const listener of listeners) listener()
  }
  return {
    wake: Effect.sync(unsafeWake),
    unsafeWake,
    subscribe: (listener) => {
      const entry = () => listener()
      listeners.add(entry)
      return () => {
        listeners.delete(entry)
      }
    }
  }
}
