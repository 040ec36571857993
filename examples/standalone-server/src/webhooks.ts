import type { WebhookHandlerOptions } from "@switchboard/http-adapter"
import { Config, ConfigError, Either, Option } from "effect"

/**
 * Outgoing webhooks of the standalone server (docs/webhooks.md "Options"), read from the
 * environment; the server's handler runs the dispatcher:
 * - `SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE`: `1` (or `true`) accepts `http://` endpoint URLs
 *   and loopback, private and other internal addresses (development and tests only);
 *   `0`, `false`, unset or empty: `https` and public addresses only;
 * - `SWITCHBOARD_WEBHOOKS_RETRY_DELAYS_MS`: the delays between attempts, a comma-separated
 *   list of milliseconds (integers ≥ 0, for example `5000,300000`); unset or empty: the
 *   default schedule (about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h).
 *
 * A bad value fails with an error naming its variable.
 *
 * @category config
 */
export const webhookConfig: Config.Config<WebhookHandlerOptions> = Config.all({
  allowPrivate: optionalText("SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE").pipe(Config.mapOrFail(parseAllowPrivate)),
  retryDelaysMs: delayListConfig("SWITCHBOARD_WEBHOOKS_RETRY_DELAYS_MS")
}).pipe(
  Config.map(({ allowPrivate, retryDelaysMs }) => ({
    allowInsecureUrls: allowPrivate,
    allowPrivateNetworks: allowPrivate,
    ...Option.match(retryDelaysMs, { onNone: () => ({}), onSome: (delays) => ({ retryDelaysMs: delays }) })
  }))
)

/**
 * The start-up warning when outgoing webhooks may go to `http://` and internal addresses
 * (`SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE=1`), else `undefined`.
 *
 * @category config
 */
export const describeWebhookSafety = (options: WebhookHandlerOptions): string | undefined =>
  options.allowPrivateNetworks === true || options.allowInsecureUrls === true
    ? "warning: SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE is on: webhook endpoints may use http:// and loopback, private " +
      "or other internal addresses (for development and tests only; docs/webhooks.md)"
    : undefined

/**
 * The start-up line about WhatsApp's webhook (docs/whatsapp-webhooks.md): the URL to
 * register with Meta and whether each secret is set, for example `WhatsApp webhook:
 * http://127.0.0.1:3000/api/v1/api/webhooks/whatsapp (verify token set, app secret not
 * set: every POST is refused)`. Never the secrets themselves.
 *
 * @category config
 */
export const describeWhatsAppWebhook = (
  url: string,
  secrets: { readonly verifyToken?: string | undefined; readonly appSecret?: string | undefined }
): string => {
  const isSet = (value: string | undefined) => value !== undefined && value.trim() !== ""
  const verifyToken = isSet(secrets.verifyToken)
    ? "verify token set"
    : "verify token not set (WHATSAPP_WEBHOOK_VERIFY_TOKEN): the handshake is refused"
  const appSecret = isSet(secrets.appSecret)
    ? "app secret set"
    : "app secret not set (WHATSAPP_APP_SECRET): every POST is refused"
  return `WhatsApp webhook: ${url} (${verifyToken}, ${appSecret})`
}

function parseAllowPrivate(value: Option.Option<string>): Either.Either<boolean, ConfigError.ConfigError> {
  if (Option.isNone(value)) return Either.right(false)
  const text = value.value.toLowerCase()
  if (text === "1" || text === "true") return Either.right(true)
  if (text === "0" || text === "false") return Either.right(false)
  return Either.left(
    ConfigError.InvalidData(["SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE"], "SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE must be 1, true, 0 or false")
  )
}

/**
 * A variable holding a comma-separated list of delays in milliseconds (integers ≥ 0, like
 * `5000,300000`): `None` when unset or empty; anything else fails naming the variable.
 *
 * @category config
 */
export function delayListConfig(name: string): Config.Config<Option.Option<ReadonlyArray<number>>> {
  return optionalText(name).pipe(
    Config.mapOrFail((value) => {
      if (Option.isNone(value)) return Either.right(Option.none())
      const parts = value.value.split(",").map((part) => part.trim())
      if (parts.every((part) => /^\d{1,10}$/.test(part))) return Either.right(Option.some(parts.map(Number)))
      return Either.left(
        ConfigError.InvalidData([name], `${name} must be a comma-separated list of milliseconds (integers ≥ 0), like 5000,300000`)
      )
    })
  )
}

/**
 * A variable holding a positive number of milliseconds (an integer ≥ 1): `None` when unset
 * or empty; anything else fails naming the variable.
 *
 * @category config
 */
export function millisecondsConfig(name: string): Config.Config<Option.Option<number>> {
  return optionalText(name).pipe(
    Config.mapOrFail((value) => {
      if (Option.isNone(value)) return Either.right(Option.none())
      if (/^\d{1,10}$/.test(value.value) && Number(value.value) >= 1) return Either.right(Option.some(Number(value.value)))
      return Either.left(ConfigError.InvalidData([name], `${name} must be a number of milliseconds (an integer ≥ 1), like 10000`))
    })
  )
}

/** A variable's trimmed value; `None` when unset or empty. */
function optionalText(name: string): Config.Config<Option.Option<string>> {
  return Config.option(Config.string(name)).pipe(
    Config.map((value) => Option.filter(Option.map(value, (text) => text.trim()), (text) => text !== ""))
  )
}
