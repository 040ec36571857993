import { Context, Layer } from "effect"

/**
 * The value of {@link SecretKey}: the 32-byte key channel access tokens are encrypted
 * under, `undefined` when none is configured.
 *
 * @category channels
 */
export interface SecretKeyValue {
  readonly key: Uint8Array | undefined
}

/**
 * The secret key of the store's encrypted values (docs/channels.md "The secret key").
 * Default none: channel operations then fail with `SecretKeyMissing` and nothing else
 * changes. Provide one with `SecretKey.layer(key)` (a key read by `parseSecretKey`);
 * `createHandler({ secretKey })` does it for the http-adapter.
 *
 * @category channels
 * @example
 * import { Either } from "effect"
 * import { parseSecretKey, SecretKey } from "@switchboard/core"
 * const key = Either.getOrThrow(parseSecretKey(process.env.SWITCHBOARD_SECRET_KEY!))
 * const secretKeyLayer = SecretKey.layer(key)
 */
export class SecretKey extends Context.Reference<SecretKey>()("@switchboard/core/SecretKey", {
  defaultValue: (): SecretKeyValue => ({ key: undefined })
}) {
  /** A Layer providing `key` (32 bytes) as the secret key. */
  static readonly layer = (key: Uint8Array): Layer.Layer<SecretKey> => Layer.succeed(SecretKey, { key })
}
