import { Either, Layer } from "effect"
import {
  ChannelVerifier,
  type GraphApiOptions,
  MessageTransport,
  MetaTemplateApi,
  parseSecretKey,
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
 * (docs/templates-and-replies.md "Templates from Meta"). A `secretKey` string that is not 32 bytes of base64 or hex
 * throws at once, naming the option and never repeating the value: a misconfigured host
 * must not start serving.
 */
export const channelLayerOf = (options: {
  readonly secretKey?: string | Uint8Array | undefined
  readonly channelVerifier?: Layer.Layer<ChannelVerifier> | undefined
  readonly metaTemplateApi?: Layer.Layer<MetaTemplateApi> | undefined
  readonly templateSync?: { readonly intervalMs?: number } | undefined
  readonly graphApi?: GraphApiOptions | undefined
}): Layer.Layer<SecretKey | ChannelVerifier | MetaTemplateApi> => {
  const key = options.secretKey === undefined ? undefined : secretKeyBytes(options.secretKey)
  const keyLayer = key === undefined ? Layer.empty : SecretKey.layer(key)
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
  options.transport ?? Layer.succeed(MessageTransport, WhatsAppCloudTransport.withChannels(options.graphApi ?? {}, recordingTransport))

const secretKeyBytes = (secretKey: string | Uint8Array): Uint8Array => {
  if (typeof secretKey !== "string") {
    if (secretKey.length !== 32) throw new TypeError("createHandler: secretKey must be 32 bytes")
    return secretKey
  }
  const parsed = parseSecretKey(secretKey)
  if (Either.isLeft(parsed)) throw new TypeError(`createHandler: secretKey ${parsed.left}`)
  return parsed.right
}
