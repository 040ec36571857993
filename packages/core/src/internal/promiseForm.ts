import { Effect } from "effect"

/**
 * A function answering an Effect that may carry `promise`: the same call as a promise,
 * which resolves with the success and rejects with the failure (a defect rejects with the
 * defect itself). The send queue's dispatcher calls the promise forms of the transport's
 * `send` and the store's `outbox.record`, on a live clock, so that a message's attempt and
 * its record run without a fiber (docs/benchmarks.md "A message without a fiber"). A
 * promise form lives on the function it mirrors, so a wrapper that replaces the function
 * drops it with it: the caller then runs the Effect, as written. Made with
 * {@link withPromise}; a wrapper keeps it with {@link tappedWithPromise}.
 *
 * @category promise forms
 */
export interface WithPromiseForm<Args extends ReadonlyArray<unknown>, A, E> {
  (...args: Args): Effect.Effect<A, E>
  readonly promise?: (...args: Args) => Promise<A>
}

/**
 * `run` carrying `promise`, the same call as a promise ({@link WithPromiseForm}).
 *
 * @category promise forms
 */
export const withPromise = <Args extends ReadonlyArray<unknown>, A, E>(
  run: (...args: Args) => Effect.Effect<A, E>,
  promise: (...args: Args) => Promise<A>
): WithPromiseForm<Args, A, E> & { readonly promise: (...args: Args) => Promise<A> } =>
  Object.assign((...args: Args) => run(...args), { promise })

/**
 * `call` followed, once it succeeded, by `after(value, ...args)` (synchronous; what it
 * throws is a defect of the call), in both forms: the Effect, and the promise form when
 * `call` has one (else none). For a wrapper of a store (the metered store, the waking
 * one) that must not take the promise form away.
 *
 * @category promise forms
 */
export const tappedWithPromise = <Args extends ReadonlyArray<unknown>, A, E>(
  call: WithPromiseForm<Args, A, E>,
  after: (value: A, ...args: Args) => void
): WithPromiseForm<Args, A, E> => {
  const run = (...args: Args): Effect.Effect<A, E> => Effect.tap(call(...args), (value) => Effect.sync(() => after(value, ...args)))
  const promise = tappedPromise(call.promise, after)
  return promise === undefined ? run : withPromise(run, promise)
}

/**
 * `call`, a promise-returning function, with `after(value, ...args)` run once its promise
 * resolved and before its caller sees the value (a rejection passes through untouched);
 * `undefined` when `call` is: a wrapper of an optional promise form keeps it optional.
 *
 * @category promise forms
 */
export const tappedPromise = <Args extends ReadonlyArray<unknown>, A>(
  call: ((...args: Args) => Promise<A>) | undefined,
  after: (value: A, ...args: Args) => void
): ((...args: Args) => Promise<A>) | undefined =>
  call === undefined
    ? undefined
    : (...args: Args) =>
      call(...args).then((value) => {
        after(value, ...args)
        return value
      })
