import { Data } from "effect"
import { failureResponse, type ApiResponse, type ErrorItem } from "./envelope.js"

/**
 * A failure decided by the HTTP layer itself, not by the domain: authentication header
 * problems, unreadable or invalid requests (docs/http-adapter.md "Authentication", "Request edges").
 *
 * @category errors
 */
export class HttpFailure extends Data.TaggedError("HttpFailure")<{
  readonly status: number
  readonly code: string
  readonly message: string
  readonly errors?: ReadonlyArray<ErrorItem>
  readonly headers?: Readonly<Record<string, string>>
}> {
  /** The response this failure is answered with. */
  toResponse(): ApiResponse {
    return failureResponse(this.status, this.code, this.message, this.errors, this.headers)
  }
}
