import { Effect } from "effect"

/**
 * Calls asked for during one turn of the Node event loop and answered together at its end
 * (`setImmediate`, after the I/O callbacks that asked), by one synchronous call of
 * `answerAll` (docs/benchmarks.md "What each change bought"). What is paid once per group (a `PRAGMA
 * data_version` reading, a write transaction's locks and commit) is then shared by every
 * request of that turn.
 *
 * `answerAll` receives the requests in the order they were asked and returns one answer
 * per request, in that order, each as the Effect the caller's fiber resumes with (a success
 * or a `StorageError`). A defect it throws answers every request of the group with that
 * defect: no caller is left waiting.
 *
 * Each call of the returned function is asynchronous: its answer always comes at the end of
 * the turn it was asked in, never synchronously.
 */
export const endOfTurnQueue = <Request, A, E>(
  answerAll: (requests: ReadonlyArray<Request>) => ReadonlyArray<Effect.Effect<A, E>>
): ((request: Request) => Effect.Effect<A, E>) => {
  let requests: Array<Request> = []
  let resumers: Array<(answer: Effect.Effect<A, E>) => void> = []
  const answerQueued = (): void => {
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
  return (request) =>
    Effect.async<A, E>((resume) => {
      requests.push(request)
      if (resumers.push(resume) === 1) setImmediate(answerQueued)
    })
}
