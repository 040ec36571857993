import { ChannelVerifier, DEFAULT_GRAPH_API_VERSION, graphBaseUrl, type GraphApiOptions, type MessageTransport, WhatsAppCloudTransport } from "@switchboard/core"
import { Config, ConfigError, Either, type Layer, Option } from "effect"

/**
 * How the standalone server delivers sends (docs/messaging.md "Transports"): through the
 * WhatsApp Cloud API when it is configured, else through core's recording transport
 * (stores the message and marks it sent, no network).
 *
 * @category models
 */
export type TransportChoice =
  | { readonly _tag: "Recording" }
  | { readonly _tag: "WhatsAppCloud"; readonly options: WhatsAppCloudTransport.WhatsAppCloudOptions }

/**
 * Reads the transport from the environment:
 * - `WHATSAPP_PHONE_NUMBER_ID` and `WHATSAPP_ACCESS_TOKEN`: both set → the WhatsApp Cloud
 *   API transport; both unset or empty → the recording transport; only one → an error
 *   naming the other;
 * - `WHATSAPP_API_BASE_URL` (default `https://graph.facebook.com`; an `http(s)` URL) and
 *   `WHATSAPP_API_VERSION` (default `v21.0`; like `v21.0`): see {@link graphApiConfig}.
 *
 * Errors name the variable and never echo the access token.
 *
 * @category config
 */
export const transportConfig: Config.Config<TransportChoice> = Config.all({
  phoneNumberId: optionalText("WHATSAPP_PHONE_NUMBER_ID"),
  accessToken: optionalText("WHATSAPP_ACCESS_TOKEN"),
  baseUrl: optionalText("WHATSAPP_API_BASE_URL").pipe(Config.mapOrFail(parseBaseUrl)),
  apiVersion: optionalText("WHATSAPP_API_VERSION").pipe(Config.mapOrFail(parseApiVersion))
}).pipe(
  Config.mapOrFail(({ accessToken, apiVersion, baseUrl, phoneNumberId }): Either.Either<TransportChoice, ConfigError.ConfigError> => {
    if (Option.isNone(phoneNumberId) && Option.isNone(accessToken)) return Either.right({ _tag: "Recording" })
    if (Option.isNone(phoneNumberId)) {
      return Either.left(ConfigError.MissingData(["WHATSAPP_PHONE_NUMBER_ID"], "WHATSAPP_ACCESS_TOKEN is set without WHATSAPP_PHONE_NUMBER_ID"))
    }
    if (Option.isNone(accessToken)) {
      return Either.left(ConfigError.MissingData(["WHATSAPP_ACCESS_TOKEN"], "WHATSAPP_PHONE_NUMBER_ID is set without WHATSAPP_ACCESS_TOKEN"))
    }
    return Either.right({
      _tag: "WhatsAppCloud",
      options: {
        phoneNumberId: phoneNumberId.value,
        accessToken: accessToken.value,
        ...Option.match(baseUrl, { onNone: () => ({}), onSome: (url) => ({ baseUrl: url }) }),
        ...Option.match(apiVersion, { onNone: () => ({}), onSome: (version) => ({ apiVersion: version }) })
      }
    })
  })
)

/**
 * Where the Graph API is, for channel verification (`POST /channels`, `channel add`) and
 * the sends: `WHATSAPP_API_BASE_URL` (default `https://graph.facebook.com`; an `http(s)`
 * URL, trailing slashes dropped) and `WHATSAPP_API_VERSION` (default `v21.0`; like
 * `v21.0`). docs/channels.md "Verification".
 *
 * @category config
 */
export const graphApiConfig: Config.Config<GraphApiOptions> = Config.all({
  baseUrl: optionalText("WHATSAPP_API_BASE_URL").pipe(Config.mapOrFail(parseBaseUrl)),
  apiVersion: optionalText("WHATSAPP_API_VERSION").pipe(Config.mapOrFail(parseApiVersion))
}).pipe(
  Config.map(({ apiVersion, baseUrl }) => ({
    ...Option.match(baseUrl, { onNone: () => ({}), onSome: (url) => ({ baseUrl: url }) }),
    ...Option.match(apiVersion, { onNone: () => ({}), onSome: (version) => ({ apiVersion: version }) })
  }))
)

/**
 * The channel verifier of the Graph API options (see {@link graphApiConfig}).
 *
 * @category layers
 */
export const channelVerifierFor = (options: GraphApiOptions): Layer.Layer<ChannelVerifier> => ChannelVerifier.graph(options)

/**
 * The `transport` option of `createHandler` for the choice: `undefined` (the handler's
 * default, the recording transport) or the WhatsApp Cloud API transport's Layer.
 *
 * @category layers
 */
export const transportLayerFor = (choice: TransportChoice): Layer.Layer<MessageTransport> | undefined =>
  choice._tag === "Recording" ? undefined : WhatsAppCloudTransport.layer(choice.options)

/**
 * One line for stderr at start-up, saying that organizations with a channel send through
 * it, and what the others use: the `WHATSAPP_*` number (with its Graph API address) or the
 * recording transport.
 * Never the access token.
 *
 * @category config
 */
export const describeTransport = (choice: TransportChoice): string =>
  choice._tag === "Recording"
    ? "Sends: through each organization's channel when it has one, else recorded (stored and marked sent, nothing leaves this server)"
    : `Sends: through each organization's channel when it has one, else WhatsApp Cloud API phone number id ${choice.options.phoneNumberId}, ` +
      `${choice.options.baseUrl ?? "https://graph.facebook.com"}`

/**
 * The start-up line naming where channels are verified and channel sends go:
 * `Graph API: <base URL> <version>` (`WHATSAPP_API_BASE_URL`, `WHATSAPP_API_VERSION`).
 *
 * @category config
 */
export const describeGraphApi = (options: GraphApiOptions): string =>
  `Graph API: ${graphBaseUrl(options)} ${options.apiVersion ?? DEFAULT_GRAPH_API_VERSION} (channel verification and channel sends)`

/** A variable's trimmed value; `None` when unset or empty. */
function optionalText(name: string): Config.Config<Option.Option<string>> {
  return Config.option(Config.string(name)).pipe(
    Config.map((value) => Option.filter(Option.map(value, (text) => text.trim()), (text) => text !== ""))
  )
}

function parseBaseUrl(value: Option.Option<string>): Either.Either<Option.Option<string>, ConfigError.ConfigError> {
  if (Option.isNone(value)) return Either.right(value)
  let url: URL | undefined
  try {
    url = new URL(value.value)
  } catch {
    url = undefined
  }
  return url !== undefined && (url.protocol === "http:" || url.protocol === "https:")
    ? Either.right(Option.some(value.value.replace(/\/+$/, "")))
    : Either.left(ConfigError.InvalidData(["WHATSAPP_API_BASE_URL"], "WHATSAPP_API_BASE_URL must be an http:// or https:// URL"))
}

function parseApiVersion(value: Option.Option<string>): Either.Either<Option.Option<string>, ConfigError.ConfigError> {
  if (Option.isNone(value) || /^v\d+(\.\d+)?$/.test(value.value)) return Either.right(value)
  return Either.left(ConfigError.InvalidData(["WHATSAPP_API_VERSION"], "WHATSAPP_API_VERSION must look like v21.0"))
}
