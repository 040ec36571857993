import { Effect } from "effect"
import { StorageError } from "@switchboard/core"

/** TEMPORARY during development: a repository whose every method fails. Removed before merge. */
export const notBuilt = <R>(name: string): R =>
  new Proxy({}, { get: (_, method) => () => Effect.fail(new StorageError({ operation: `${name}.${String(method)}`, cause: new Error("not built yet") })) }) as R
