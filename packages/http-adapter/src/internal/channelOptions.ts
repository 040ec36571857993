import { Either, Layer } from "effect"
import { type ChannelVerifier, parseSecretKey, SecretKey } from "@switchboard/core"

/**
 * The Layer giving core's `Channels` the handler's `secretKey` and `channelVerifier`
 * options (docs/channels.md). A `secretKey` string that is not 32 bytes of base64 or hex
 * throws at once, naming the option and never repeating the value: a misconfigured host
 * must not start serving.
 */
export const channelLayerOf = (options: {
  readonly secretKey?: string | Uint8Array | undefined
  readonly channelVerifier?: Layer.Layer<ChannelVerifier> | undefined
}): Layer.Layer<SecretKey | ChannelVerifier> => {
  const key = options.secretKey === undefined ? undefined : secretKeyBytes(options.secretKey)
  const keyLayer = key === undefined ? Layer.empty : SecretKey.layer(key)
  return Layer.merge(keyLayer, options.channelVerifier ?? Layer.empty) as Layer.Layer<SecretKey | ChannelVerifier>
}

const secretKeyBytes = (secretKey: string | Uint8Array): Uint8Array => {
  if (typeof secretKey !== "string") {
    if (secretKey.length !== 32) throw new TypeError("createHandler: secretKey must be 32 bytes")
    return secretKey
  }
  const parsed = parseSecretKey(secretKey)
  if (Either.isLeft(parsed)) throw new TypeError(`createHandler: secretKey ${parsed.left}`)
  return parsed.right
}
