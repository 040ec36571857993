import { Context, Effect, Layer } from "effect"
import { v7 as uuidv7 } from "uuid"

/**
 * The one injectable source of randomness for ids and secrets.
 * `bytes(size)` returns `size` cryptographically secure random bytes; `uuid()` returns a
 * time-ordered UUID v7 string and `uuids(count)` that many. Tests provide their own implementation to get
 * reproducible ids.
 *
 * @category services
 */
export interface SecureRandomService {
  readonly bytes: (size: number) => Effect.Effect<Uint8Array>
  readonly uuid: () => Effect.Effect<string>
  /** `count` fresh UUID v7 strings, in time order. */
  readonly uuids: (count: number) => Effect.Effect<ReadonlyArray<string>>
}

/**
 * Tag of the {@link SecureRandomService}. `SecureRandom.layer` uses Web Crypto
 * (`crypto.getRandomValues`) and `uuid` v7.
 *
 * @category services
 */
export class SecureRandom extends Context.Tag("@switchboard/core/SecureRandom")<
  SecureRandom,
  SecureRandomService
>() {
  /** Web Crypto bytes and UUID v7 ids. */
  static readonly layer: Layer.Layer<SecureRandom> = Layer.succeed(SecureRandom, {
    bytes: (size) => Effect.sync(() => crypto.getRandomValues(new Uint8Array(size))),
    uuid: () => Effect.sync(() => uuidv7()),
    uuids: (count) => Effect.sync(() => Array.from({ length: count }, () => uuidv7()))
  })
}
