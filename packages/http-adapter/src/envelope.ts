import type { Readable } from "node:stream"
/**
 * One item of a failure envelope's `errors`: a stable snake_case `code`, a human
 * `message`, and the JSON path of the offending `field` (for example `contacts[3].email`)
 * when the error is about one (docs/http-api.md "Envelope"). An
 * `outside_customer_service_window` item also carries `window_expires_at`: when the
 * contact's customer service window on the channel closed (ISO 8601), `null` when the
 * contact never wrote through it (docs/messaging.md "The customer service window"). A
 * `message_not_reactable` item carries `reason`: `no_provider_id`, `too_old`,
 * `not_a_message` or `no_channel` (docs/messaging.md "Reactions").
 *
 * @category envelope
 */
export interface ErrorItem {
  readonly code: string
  readonly message: string
  readonly field?: string
  readonly window_expires_at?: string | null
  readonly reason?: string
}

/**
 * The JSON body of every response (docs/http-api.md "Envelope"): `status` equals
 * the HTTP status; a success has `success: true` and `errors: []`; a failure has
 * `success: false`, `data: null` and at least one error item.
 *
 * @category envelope
 */
export interface Envelope<Data = unknown> {
  readonly status: number
  readonly success: boolean
  readonly message: string
  readonly data: Data | null
  readonly errors: ReadonlyArray<ErrorItem>
}

/**
 * A response before it is written: HTTP status, extra headers and the envelope. When
 * `raw` is set (only the discovery files: `openapi.json`, the `/docs` page and its assets),
 * the body written is `raw.content` with `raw.contentType`, not the envelope; when
 * `binary` is set (a route answering `BinaryContent`), the body is `binary.stream`'s
 * bytes, `binary.length` of them, with `binary.contentType`.
 *
 * @category envelope
 */
export interface ApiResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Envelope
  readonly raw?: { readonly contentType: string; readonly content: string }
  readonly binary?: { readonly contentType: string; readonly length: number; readonly stream: Readable }
}

/**
 * A success response: HTTP 200 (docs/http-api.md "Statuses": creates and sends included).
 *
 * @category envelope
 */
export const successResponse = (message: string, data: unknown): ApiResponse => ({
  status: 200,
  headers: {},
  body: { status: 200, success: true, message, data, errors: [] }
})

/**
 * A failure response with `data: null`. When `errors` is empty, one item with `code` and
 * `message` is made.
 *
 * @category envelope
 */
export const failureResponse = (
  status: number,
  code: string,
  message: string,
  errors: ReadonlyArray<ErrorItem> = [],
  headers: Readonly<Record<string, string>> = {}
): ApiResponse => ({
  status,
  headers,
  body: {
    status,
    success: false,
    message,
    data: null,
    errors: errors.length > 0 ? errors : [{ code, message }]
  }
})
