import { Cause } from "effect"

/** The message of a cause's main error (a storage error names only its operation), for a log line. */
export const describeCause = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  return error instanceof Error ? error.message : "unknown error"
}
