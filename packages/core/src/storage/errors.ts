import { Schema } from "effect"

/**
 * The one infrastructure failure of every storage adapter: a driver call failed.
 * `operation` names the repository method (for example `"organizations.insert"`);
 * `cause` keeps the driver's error for logs and is never exposed over HTTP (docs/errors.md "Server").
 *
 * @category errors
 */
export class StorageError extends Schema.TaggedError<StorageError>()("StorageError", {
  operation: Schema.String,
  cause: Schema.Defect
}) {
  override get message(): string {
    return `Storage operation ${this.operation} failed`
  }
}
