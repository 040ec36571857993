import { Cause, Option } from "effect"

/**
 * One line describing why a program failed, for stderr: the expected error's `message`
 * (followed by its cause's message, as for a `StorageError`), or Effect's rendering of an
 * unexpected defect. Messages of Switchboard errors never contain API keys.
 *
 * @category errors
 */
export const describeCause = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  return Option.isSome(failure) ? describeError(failure.value) : Cause.pretty(cause)
}

/**
 * An error's message followed by its `cause`'s message when that is an `Error`.
 *
 * @category errors
 */
export const describeError = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error)
  const cause = "cause" in error && error.cause instanceof Error ? `: ${error.cause.message}` : ""
  return `${error.message}${cause}`
}
