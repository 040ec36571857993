import { Either, Layer } from "effect"
import {
  ChannelVerifier,
  type GraphApiOptions,
  MessageTransport,
  MetaTemplateApi,
  parseSecretKeys,
  recordingTransport,
  SecretKey,
  TemplateSyncInterval,
  WhatsAppCloudTransport
} from "@switchboard/core"

/**
 * The Layer giving core's `Channels` the handler's `secretKey` and `channelVerifier`
 * options (docs/channels.md); without a `channelVerifier`, the Graph API at `graphApi`
 * verifies. Meta's template management API (`MetaTemplateApi`: submission, deletion and
 * the template sync) is the `metaTemplateApi` option, else the Graph API at `graphApi`
 * (docs/templates-and-replies.md "Templates from Meta"). `secretKey` is one key or several
 * (a comma-separated string, or a list): the first encrypts, every one decrypts
 * (docs/deployment.md "Rotating the secret key"). A key that is not 32 bytes of base64 or
 * hex throws at once, naming the option and never repeating the value: a misconfigured
 * host must not start serving.
 */
export const channelLayerOf = (options: {
  readonly secretKey?: SecretKeyOption | undefined
  readonly channelVerifier?: Layer.Layer<ChannelVerifier> | undefined
  readonly metaTemplateApi?: Layer.Layer<MetaTemplateApi> | undefined
  readonly templateSync?: { readonly intervalMs?: number } | undefined
  readonly graphApi?: GraphApiOptions | undefined
}): Layer.Layer<SecretKey | ChannelVerifier | MetaTemplateApi> => {
  const keys = options.secretKey === undefined ? undefined : secretKeysOf(options.secretKey)
  const keyLayer = keys === undefined ? Layer.empty : SecretKey.layer(keys)
  const verifier = options.channelVerifier ?? ChannelVerifier.graph(options.graphApi ?? {})
  const templateApi = options.metaTemplateApi ?? MetaTemplateApi.graph(options.graphApi ?? {})
  const intervalMs = options.templateSync?.intervalMs
  const interval = intervalMs === undefined ? Layer.empty : Layer.succeed(TemplateSyncInterval, intervalMs)
  return Layer.mergeAll(keyLayer, verifier, templateApi, interval) as Layer.Layer<SecretKey | ChannelVerifier | MetaTemplateApi>
}

/**
 * The handler's transport (docs/messaging.md "Transports"): the `transport` option as
 * given (it receives each message's `channel`), else the default — a message with a
 * channel through the WhatsApp Cloud API at `graphApi` with that channel's number and
 * token, the others recorded (stored and marked sent, no network).
 */
export const transportLayerOf = (options: {
  readonly transport?: Layer.Layer<MessageTransport> | undefined
  readonly graphApi?: GraphApiOptions | undefined
}): Layer.Layer<MessageTransport> =>
  options.transport ?? WhatsAppCloudTransport.withChannelsLayer(options.graphApi ?? {}, recordingTransport)

/**
 * The `secretKey` option: one key (32 bytes, or base64 / hex text), several keys in one
 * comma-separated string (`"new,old"`), or a non-empty list of keys. The first encrypts;
 * every one decrypts, tried in order.
 */
export type SecretKeyOption = string | Uint8Array | ReadonlyArray<string | Uint8Array>

/** The keys of a `secretKey` option, the encrypting one first; throws naming the option on a bad one. */
const secretKeysOf = (secretKey: SecretKeyOption): ReadonlyArray<Uint8Array> => {
  const entries: ReadonlyArray<string | Uint8Array> = typeof secretKey === "string" || secretKey instanceof Uint8Array ? [secretKey] : secretKey
  if (entries.length === 0) throw new TypeError("createHandler: secretKey must name at least one key")
  const keys = entries.flatMap((entry, index): ReadonlyArray<Uint8Array> => {
    const where = entries.length === 1 ? "secretKey" : `secretKey[${index}]`
    if (typeof entry !== "string") {
      if (entry.length !== 32) throw new TypeError(`createHandler: ${where} must be 32 bytes`)
      return [entry]
    }
    const parsed = parseSecretKeys(entry)
    if (Either.isLeft(parsed)) throw new TypeError(`createHandler: ${where} ${parsed.left}`)
    return parsed.right
  })
  return keys
}
