import { Schema } from "effect"

/**
 * A call to Meta's template management API (list, submit, delete) did not do what was
 * asked (docs/templates-and-replies.md "Templates from Meta"): `reason` is Meta's
 * `error.message` (or what went wrong, naming the Graph API's base URL; never the access
 * token); `provider_code` and `provider_subcode` Meta's `error.code` and
 * `error.error_subcode` as strings (`null` when absent); `http_status` the answer's
 * status (`null` when none came); `network_error` the socket error's code when no whole
 * answer came (`TimeoutError` for the timeout). {@link metaTemplateCallRetryable} tells
 * whether the same call may succeed later.
 *
 * @category errors
 */
export class MetaTemplateCallFailed extends Schema.TaggedError<MetaTemplateCallFailed>()("MetaTemplateCallFailed", {
  reason: Schema.String,
  provider_code: Schema.NullOr(Schema.String),
  provider_subcode: Schema.NullOr(Schema.String),
  http_status: Schema.NullOr(Schema.Number),
  network_error: Schema.NullOr(Schema.String)
}) {
  override get message(): string {
    return this.reason
  }
}

/**
 * Meta's error codes after which a template call is tried again (docs/templates-and-replies.md
 * "Templates from Meta"): 1 and 2 (Meta's temporary failures), 4 and 80008 (the app's and
 * the account's call limits), 130429 (throughput).
 *
 * @category templates
 */
export const META_TEMPLATE_RETRY_CODES: ReadonlyArray<string> = ["1", "2", "4", "80008", "130429"]

/**
 * Whether a failed template call may succeed when tried again: one of
 * {@link META_TEMPLATE_RETRY_CODES}, an HTTP 5xx answer, or no answer at all (a network
 * error or the timeout). Any other failure (a refused token, a bad request) stays until
 * something changes.
 *
 * @category templates
 */
export const metaTemplateCallRetryable = (failure: MetaTemplateCallFailed): boolean =>
  (failure.provider_code !== null && META_TEMPLATE_RETRY_CODES.includes(failure.provider_code)) ||
  (failure.http_status !== null && failure.http_status >= 500 && failure.http_status <= 599) ||
  (failure.http_status === null && failure.network_error !== null)
