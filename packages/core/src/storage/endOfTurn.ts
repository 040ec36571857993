import { Cause, Effect, Exit } from "effect"
import { withPromise, type WithPromiseForm } from "../internal/promiseForm.js"

/**
 * For storage adapters: calls asked for during one turn of the Node event loop and answered
 * together at its end (`setImmediate`, after the I/O callbacks that asked), by one
 * synchronous call of `answerAll` (docs/benchmarks.md "What each change bought"). What is
 * paid once per group (SQLite: a `PRAGMA data_version` reading, a write transaction's
 * locks and commit; PostgreSQL: a round trip) is then shared by every request of that turn.
 *
 * `answerAll` receives the requests in the order they were asked and returns one answer
 * per request, in that order, each as the Effect the caller's fiber resumes with (a success
 * or a `StorageError`; an Effect still to run, such as the wait for a query the group
 * shares). A defect it throws answers every request of the group with that defect: no
 * caller is left waiting.
 *
 * Each call of the returned function is asynchronous: its answer always comes at the end of
 * the turn it was asked in, never synchronously. It carries `promise` (`WithPromiseForm`):
 * the same call, joining the same groups, as a promise (an answer that is an `Exit` settles
 * it at once; any other answer is run first).
 *
 * @category storage
 */
export const endOfTurnQueue = <Request, A, E>(
  answerAll: (requests: ReadonlyArray<Request>) => ReadonlyArray<Effect.Effect<A, E>>
): GroupedCall<Request, A, E> => groupedQueue(answerAll, { windowMs: 0, maxSize: Number.POSITIVE_INFINITY })

/**
 * {@link endOfTurnQueue} over a longer window: the calls asked for within `windowMs` (ms)
 * of the group's first are answered together (a timer), or at once, in the call that
 * makes `maxSize` of them wait. `windowMs` 0 answers at the end of the turn (`setImmediate`).
 *
 * @category storage
 */
export const groupedQueue = <Request, A, E>(
  answerAll: (requests: ReadonlyArray<Request>) => ReadonlyArray<Effect.Effect<A, E>>,
  options: { readonly windowMs: number; readonly maxSize: number }
): GroupedCall<Request, A, E> => {
  let requests: Array<Request> = []
  let resumers: Array<(answer: Effect.Effect<A, E>) => void> = []
  let timer: ReturnType<typeof setTimeout> | undefined
  const answerQueued = (): void => {
    if (timer !== undefined) {
      clearTimeout(timer)
      timer = undefined
    }
    if (requests.length === 0) return
    const group = requests
    const resume = resumers
    requests = []
    resumers = []
    let answers: ReadonlyArray<Effect.Effect<A, E>>
    try {
      answers = answerAll(group)
    } catch (defect) {
      const died = Effect.die(defect)
      for (const answer of resume) answer(died)
      return
    }
    for (let index = 0; index < resume.length; index++) resume[index]!(answers[index]!)
  }
  const enqueue = (request: Request, resume: (answer: Effect.Effect<A, E>) => void): void => {
    requests.push(request)
    const waiting = resumers.push(resume)
    if (waiting >= options.maxSize) answerQueued()
    else if (waiting === 1) {
      if (options.windowMs <= 0) setImmediate(answerQueued)
      else timer = setTimeout(answerQueued, options.windowMs)
    }
  }
  return withPromise(
    (request: Request) => Effect.async<A, E>((resume) => enqueue(request, resume)),
    (request: Request) =>
      new Promise<A>((resolve, reject) =>
        enqueue(request, (answer) => {
          const settle = (exit: Exit.Exit<A, E>) =>
            Exit.isSuccess(exit) ? resolve(exit.value) : reject(Cause.squash(exit.cause))
          if (Exit.isExit(answer)) settle(answer as Exit.Exit<A, E>)
          else Effect.runPromiseExit(answer).then(settle)
        }))
  )
}

/**
 * A call of {@link groupedQueue} or {@link endOfTurnQueue}: the Effect, and the same call
 * as a promise (`promise`), which resolves with the answer and rejects with its failure
 * (`Cause.squash`: the error, else the defect).
 *
 * @category storage
 */
export type GroupedCall<Request, A, E> = WithPromiseForm<[request: Request], A, E> & {
  readonly promise: (request: Request) => Promise<A>
}
