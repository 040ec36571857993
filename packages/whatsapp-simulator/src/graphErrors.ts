import { randomBytes } from "node:crypto"

/**
 * The body of a Graph API error answer, as Meta writes it:
 * `{error: {message, type, code, error_subcode?, is_transient?, error_user_title?,
 * error_user_msg?, error_data?, fbtrace_id}}`. `message` is `"(#<code>) <title>"` for
 * WhatsApp codes; `error_data.details` says more; the management API's refusals (templates)
 * carry `is_transient`, `error_user_title` and `error_user_msg` instead.
 *
 * @category errors
 */
export interface GraphErrorBody {
  readonly error: {
    readonly message: string
    readonly type: string
    readonly code: number
    readonly error_subcode?: number
    readonly is_transient?: boolean
    readonly error_user_title?: string
    readonly error_user_msg?: string
    readonly error_data?: { readonly messaging_product: "whatsapp"; readonly details: string }
    readonly fbtrace_id: string
  }
}

/**
 * What a scripted error may set besides its code: the HTTP status (default
 * {@link defaultHttpStatus}), the message (default `"(#<code>) <title>"`), the subcode and
 * the details.
 *
 * @category errors
 */
export interface GraphErrorOptions {
  readonly http_status?: number
  readonly message?: string
  readonly error_subcode?: number
  readonly details?: string
}

/**
 * The titles of the Graph and WhatsApp Cloud API error codes the simulator knows (Meta's
 * "Cloud API error codes" page); an unknown code is titled `"Error <code>"`.
 *
 * @category errors
 */
export const ERROR_TITLES: Readonly<Record<number, string>> = {
  0: "AuthException",
  1: "API Unknown",
  2: "API Service",
  3: "API Method",
  4: "Application request limit reached",
  10: "Permission Denied",
  33: "Parameter value is not valid",
  100: "Invalid parameter",
  190: "Invalid OAuth access token",
  200: "Permission error",
  368: "Temporarily blocked for policies violations",
  80007: "Rate limit issues",
  130429: "Rate limit hit",
  130472: "User's number is part of an experiment",
  131000: "Something went wrong",
  131005: "Access denied",
  131008: "Required parameter is missing",
  131009: "Parameter value is not valid",
  131016: "Service unavailable",
  131021: "Recipient cannot be sender",
  131026: "Message undeliverable",
  131030: "Recipient phone number not in allowed list",
  131031: "Account has been locked",
  131042: "Business eligibility payment issue",
  131047: "Re-engagement message",
  131048: "Spam rate limit hit",
  131049: "This message was not delivered to maintain healthy ecosystem engagement",
  131050: "User has stopped marketing messages",
  131051: "Unsupported message type",
  131052: "Media download error",
  131053: "Media upload error",
  131056: "(Business Account, Consumer Account) pair rate limit hit",
  131057: "Account in maintenance mode",
  132000: "Number of parameters does not match the expected number of params",
  132001: "Template name does not exist in the translation",
  132005: "Translated text too long",
  132007: "Template Format Character Policy Violated",
  132012: "Parameter format does not match format in the created template",
  132015: "Template is Paused",
  132016: "Template is Disabled",
  133010: "Account not registered"
}

/**
 * The title of a code: {@link ERROR_TITLES}, else `"Error <code>"`.
 *
 * @category errors
 */
export const errorTitle = (code: number): string => ERROR_TITLES[code] ?? `Error ${code}`

/**
 * The HTTP status Meta answers a code with, as the simulator does unless told otherwise:
 * 0 and 190 → 401; 10 and 200–299 → 403; the throttles 4, 80007, 130429 and 131056 → 429;
 * 1, 2, 3 and 131000 → 500; 131016 → 503; any other code → 400.
 *
 * @category errors
 */
export const defaultHttpStatus = (code: number): number => {
  if (code === 0 || code === 190) return 401
  if (code === 10 || (code >= 200 && code <= 299)) return 403
  if ([4, 80007, 130429, 131056].includes(code)) return 429
  if ([1, 2, 3, 131000].includes(code)) return 500
  if (code === 131016) return 503
  return 400
}

/**
 * Meta's error body for `code` (type `OAuthException`, or `GraphMethodException` for 100
 * with subcode 33, the "object does not exist" answer) with a fresh `fbtrace_id`.
 *
 * @category errors
 * @example
 * graphError(131047) // {error: {message: "(#131047) Re-engagement message", type: "OAuthException", code: 131047, error_data: {...}, fbtrace_id}}
 */
export const graphError = (code: number, options: GraphErrorOptions = {}): GraphErrorBody => ({
  error: {
    message: options.message ?? `(#${code}) ${errorTitle(code)}`,
    type: code === 100 && options.error_subcode === 33 ? "GraphMethodException" : "OAuthException",
    code,
    ...(options.error_subcode === undefined ? {} : { error_subcode: options.error_subcode }),
    ...(code === 190 || code === 100
      ? options.details === undefined
        ? {}
        : { error_data: { messaging_product: "whatsapp" as const, details: options.details } }
      : { error_data: { messaging_product: "whatsapp" as const, details: options.details ?? errorTitle(code) } }),
    fbtrace_id: randomBytes(12).toString("base64url")
  }
})

/** Meta's answer to a missing or unknown access token (code 190, HTTP 401). */
export const invalidTokenError = (): GraphErrorBody =>
  graphError(190, { message: "Invalid OAuth access token - Cannot parse access token" })

/** Meta's answer for an id it does not know, or one the token may not use (code 100, subcode 33). */
export const unknownObjectError = (method: string, id: string): GraphErrorBody =>
  graphError(100, {
    error_subcode: 33,
    message: `Unsupported ${method.toLowerCase()} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation. Please read the Graph API documentation at https://developers.facebook.com/docs/graph-api`
  })

/** Meta's answer to a bad parameter: `"(#100) <what>"`. */
export const invalidParameterError = (what: string): GraphErrorBody => graphError(100, { message: `(#100) ${what}` })

/**
 * The management API's refusal of a template call, as Meta words it: code 100, message
 * `"Invalid parameter"`, `is_transient: false`, a `title` and a sentence for a person
 * (`error_user_title`, `error_user_msg`), and `error_subcode` when Meta gives one.
 */
export const templateError = (options: { readonly error_subcode?: number; readonly title: string; readonly message: string }): GraphErrorBody => {
  const { error } = graphError(100, { message: "Invalid parameter" })
  const { fbtrace_id, ...rest } = error
  return {
    error: {
      ...rest,
      ...(options.error_subcode === undefined ? {} : { error_subcode: options.error_subcode }),
      is_transient: false,
      error_user_title: options.title,
      error_user_msg: options.message,
      fbtrace_id
    }
  }
}

/**
 * Meta's answer to a template submitted under a name and language the account already holds
 * (any status): code 100, subcode 2388024, "Content in this language already exists".
 */
export const templateExistsError = (language: string): GraphErrorBody =>
  templateError({
    error_subcode: 2388024,
    title: "Content in this language already exists",
    message: `There is already ${language} content for this template. You can create a new template and try again.`
  })

/**
 * Meta's answer to a template submitted under the name and language of one deleted less than
 * 30 days before: code 100, subcode 2388023, "Language is being deleted".
 */
export const templateBeingDeletedError = (language: string): GraphErrorBody =>
  templateError({
    error_subcode: 2388023,
    title: "Language is being deleted",
    message: `New ${language} content can't be added while the existing ${language} content is being deleted. Try again in 4 weeks or consider creating a new message template.`
  })
