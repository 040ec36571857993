import { Effect } from "effect"
import { StorageError } from "@switchboard/core"

/**
 * Runs one repository operation (a promise over driver calls) as an Effect; any rejection
 * becomes the one infrastructure failure, a `StorageError` naming `operation` and keeping
 * the driver's error as its cause (every driver call is wrapped once).
 */
export const attempt = <A>(operation: string, run: () => Promise<A>): Effect.Effect<A, StorageError> =>
  Effect.tryPromise({ try: run, catch: (cause) => new StorageError({ operation, cause }) })

/**
 * {@link attempt} as a promise (a store method's promise form, `WithPromiseForm`): `run`'s
 * value, or a rejection with a `StorageError` naming `operation`.
 */
export const attemptPromise = <A>(operation: string, run: () => Promise<A>): Promise<A> =>
  run().catch((cause: unknown) => Promise.reject(new StorageError({ operation, cause })))

/** MongoDB's duplicate-key error code (a unique index refused a write). */
export const DUPLICATE_KEY = 11000

/**
 * Whether `error` is a duplicate-key failure: a `MongoServerError` with code 11000, or a
 * bulk write whose write errors are all duplicate keys.
 */
export const isDuplicateKey = (error: unknown): boolean => {
  if (typeof error !== "object" || error === null) return false
  const { code, writeErrors } = error as { readonly code?: unknown; readonly writeErrors?: unknown }
  if (code === DUPLICATE_KEY) return true
  const errors = Array.isArray(writeErrors) ? writeErrors : writeErrors === undefined ? [] : [writeErrors]
  return errors.length > 0 && errors.every((e: { readonly code?: unknown }) => e?.code === DUPLICATE_KEY)
}

/**
 * Runs `write`; a duplicate-key failure becomes `onDuplicate()`, anything else is
 * rethrown.
 */
export const onDuplicateKey = async <A, B>(write: () => Promise<A>, onDuplicate: () => B | Promise<B>): Promise<A | B> => {
  try {
    return await write()
  } catch (error) {
    if (isDuplicateKey(error)) return onDuplicate()
    throw error
  }
}
