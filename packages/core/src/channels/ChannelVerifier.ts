import { Context, Effect, Layer } from "effect"
import { graphAnsweredStatus, type GraphApiOptions, graphBaseUrl, graphSignal, graphUnreachable, graphUrl, withoutSecret } from "./graphApi.js"
import { ChannelVerificationFailed } from "../model/channelErrors.js"

/**
 * What Meta confirmed about a number: its `display_phone_number` as Meta writes it (for
 * example `"+1 555-010-0123"` or `"15550100123"`), `null` when the answer has none.
 *
 * @category channels
 */
export interface VerifiedNumber {
  readonly display_phone_number: string | null
}

/**
 * Proves that an access token may use a WhatsApp number before a channel is stored
 * (docs/channels.md "Verification"). Fails with {@link ChannelVerificationFailed}, whose
 * message never contains the token.
 *
 * @category channels
 */
export interface ChannelVerifierService {
  readonly verify: (request: {
    readonly phone_number_id: string
    readonly access_token: string
  }) => Effect.Effect<VerifiedNumber, ChannelVerificationFailed>
}

/**
 * The channel verifier in use. Default: Meta's Graph API at
 * `https://graph.facebook.com`, version `v21.0` ({@link graphVerifier}). Provide
 * `ChannelVerifier.graph({ baseUrl, apiVersion })` to reach another address (a test's
 * recorder), or `Layer.succeed(ChannelVerifier, { verify })` for your own check.
 *
 * @category channels
 * @example
 * import { ChannelVerifier } from "@switchboard/core"
 * const verifier = ChannelVerifier.graph({ baseUrl: "http://127.0.0.1:9999", apiVersion: "v21.0" })
 */
export class ChannelVerifier extends Context.Reference<ChannelVerifier>()("@switchboard/core/ChannelVerifier", {
  defaultValue: (): ChannelVerifierService => graphVerifier({})
}) {
  /** A Layer of {@link graphVerifier} with these Graph API options. */
  static readonly graph = (options: GraphApiOptions): Layer.Layer<ChannelVerifier> =>
    Layer.succeed(ChannelVerifier, graphVerifier(options))
}

/**
 * Verifies through the Graph API: `GET {baseUrl}/{apiVersion}/{phone_number_id}` with
 * `Authorization: Bearer <token>`. A 2xx JSON answer whose `id` (when present) is the
 * number's id succeeds with its `display_phone_number`; any other answer, a timeout
 * (`timeoutMs`, default 10 s) or a network error fails with `ChannelVerificationFailed`
 * carrying Meta's `error.message` (or what went wrong) with the token cut out; every
 * reason names the base URL tried (`Meta's Graph API at <baseUrl> …`).
 *
 * @category channels
 */
export const graphVerifier = (options: GraphApiOptions): ChannelVerifierService => ({
  verify: ({ access_token, phone_number_id }) => {
    const failed = (reason: string) =>
      new ChannelVerificationFailed({ phone_number_id, reason: withoutSecret(reason, access_token) })
    return Effect.tryPromise({
      try: async (signal) => {
        const response = await fetch(graphUrl(options, phone_number_id), {
          headers: { authorization: `Bearer ${access_token}`, accept: "application/json" },
          signal: graphSignal(options, signal)
        })
        const body = (await response.json().catch(() => ({}))) as GraphPhoneNumber
        return { ok: response.ok, status: response.status, body }
      },
      catch: (error) => failed(graphUnreachable(options, error))
    }).pipe(
      Effect.flatMap(({ body, ok, status }) => {
        if (!ok) {
          return Effect.fail(
            failed(
              body.error?.message === undefined
                ? graphAnsweredStatus(options, status)
                : `${body.error.message} (Meta's Graph API at ${graphBaseUrl(options)})`
            )
          )
        }
        if (body.id !== undefined && String(body.id) !== phone_number_id) {
          return Effect.fail(failed(`Meta's Graph API at ${graphBaseUrl(options)} answered for another phone number id`))
        }
        const display = typeof body.display_phone_number === "string" ? body.display_phone_number : null
        return Effect.succeed({ display_phone_number: display })
      })
    )
  }
})

interface GraphPhoneNumber {
  readonly id?: unknown
  readonly display_phone_number?: unknown
  readonly error?: { readonly message?: string }
}
