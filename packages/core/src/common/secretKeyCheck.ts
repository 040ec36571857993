import { Effect, Option } from "effect"
import type { StorageError } from "../storage/errors.js"
import type { StorageService } from "../storage/Storage.js"
import { SecretKeyMismatch } from "../model/channelErrors.js"
import { openSecret, sealSecret } from "./secretBox.js"

// The store's secret-key check value (docs/channels.md "The secret key"): the first value
// sealed under the key (a channel's token, a webhook endpoint's signing secret) stores it,
// and every later start and seal checks that the key is still the one it was made with.

/** The plaintext sealed as the store's secret-key check value. */
const KEY_CHECK_PLAINTEXT = "switchboard-secret-key-check-v1"

// With several keys configured (the first encrypts), the check passes when the check value
// opens under any of them: `secret-key rotate` seals it under the first one last.

/** The keys a check accepts: one key, or several (the first encrypting). */
type Keys = Uint8Array | ReadonlyArray<Uint8Array>

const encryptingKey = (keys: Keys): Uint8Array => (keys instanceof Uint8Array ? keys : keys[0]!)

/** Fails with `SecretKeyMismatch` unless `sealed` is the check value sealed under one of `keys`. */
const expectKeyCheck = (keys: Keys, sealed: string): Effect.Effect<void, SecretKeyMismatch> =>
  Option.contains(openSecret(keys, sealed), KEY_CHECK_PLAINTEXT) ? Effect.void : Effect.fail(new SecretKeyMismatch())

/** The check value sealed under `key`: what `secret-key rotate` stores last. */
export const sealKeyCheck = (key: Uint8Array): string => sealSecret(key, KEY_CHECK_PLAINTEXT)

/** Whether `sealed` is the check value sealed under one of `keys`. */
export const opensKeyCheck = (keys: Keys, sealed: string): boolean => Option.contains(openSecret(keys, sealed), KEY_CHECK_PLAINTEXT)

/** At start-up: a stored check value must open under the key, or one of the keys (none stored yet is fine). */
export const checkStoredKey = (storage: StorageService, key: Keys): Effect.Effect<void, SecretKeyMismatch | StorageError> =>
  Effect.flatMap(storage.channels.secretKeyCheck(), (stored) =>
    Option.match(stored, { onNone: () => Effect.void, onSome: (sealed) => expectKeyCheck(key, sealed) })
  )

/**
 * Before the first value is sealed under `key`: stores the key's check value when the store
 * has none; a check value of another key already stored → `SecretKeyMismatch`.
 */
export const claimKeyCheck = (storage: StorageService, key: Keys): Effect.Effect<void, SecretKeyMismatch | StorageError> =>
  Effect.flatMap(storage.channels.claimSecretKeyCheck(sealKeyCheck(encryptingKey(key))), (stored) =>
    expectKeyCheck(key, stored)
  )
