import { Effect, Fiber } from "effect"
import { type DispatchersHandle, settleWithin } from "../dispatchers.js"

/**
 * The requests a handler is running: each request's fiber from its start to its end.
 *
 * @internal
 */
export type RequestsInFlight = Set<Fiber.RuntimeFiber<unknown, unknown>>

/**
 * A handler's `drain` and `dispose` (docs/http-adapter.md "Stopping"): `drain` is the
 * dispatchers' (they claim nothing more and record the attempts in flight, at most the
 * longer attempt timeout + 2 s); `dispose` drains and, meanwhile, waits for the requests
 * still running (a send's attempt and its record) for at most `boundMs`, then closes the
 * runtime. Each resolves once, however often called.
 *
 * @internal
 */
export const handlerShutdown = (
  dispatcher: DispatchersHandle,
  requests: RequestsInFlight,
  boundMs: number
): { readonly drain: () => Promise<void>; readonly dispose: () => Promise<void> } => {
  let disposed: Promise<void> | undefined
  const requestsEnded = () =>
    requests.size === 0 ? Promise.resolve() : settleWithin(Effect.runPromise(Effect.asVoid(Fiber.awaitAll([...requests]))), boundMs)
  return {
    drain: dispatcher.drain,
    dispose: () => (disposed ??= Promise.all([dispatcher.drain(), requestsEnded()]).then(dispatcher.stop))
  }
}
