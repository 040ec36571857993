import { Context, Layer } from "effect"

/**
 * The value of {@link SecretKey}: `key`, the 32-byte key values are encrypted under
 * (`undefined` when none is configured), and `keys`, every key that decrypts, in the order
 * decryption tries them, `key` first (absent: `key` alone). Several keys let an operator
 * rotate the key (docs/deployment.md "Rotating the secret key").
 *
 * @category channels
 */
export interface SecretKeyValue {
  readonly key: Uint8Array | undefined
  readonly keys?: ReadonlyArray<Uint8Array> | undefined
}

/**
 * Every key of a {@link SecretKeyValue} that decrypts, the encrypting key first; empty when
 * none is configured.
 *
 * @category channels
 */
export const decryptionKeysOf = (value: SecretKeyValue): ReadonlyArray<Uint8Array> =>
  value.key === undefined ? [] : value.keys !== undefined && value.keys.length > 0 ? value.keys : [value.key]

/**
 * The secret key of the store's encrypted values (docs/channels.md "The secret key").
 * Default none: channel operations then fail with `SecretKeyMissing` and nothing else
 * changes. Provide one with `SecretKey.layer(key)` (a key read by `parseSecretKey`, or
 * the list `parseSecretKeys` reads: the first encrypts, every one decrypts);
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
  /**
   * A Layer providing the secret key: one key (32 bytes), or several (a non-empty list, as
   * `parseSecretKeys` reads them), the first encrypting and all decrypting.
   */
  static readonly layer = (key: Uint8Array | ReadonlyArray<Uint8Array>): Layer.Layer<SecretKey> =>
    Layer.succeed(SecretKey, key instanceof Uint8Array ? { key, keys: [key] } : { key: key[0], keys: key })
}
