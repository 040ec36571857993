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

/** Fails with `SecretKeyMismatch` unless `sealed` is the check value sealed under `key`. */
const expectKeyCheck = (key: Uint8Array, sealed: string): Effect.Effect<void, SecretKeyMismatch> =>
  Option.contains(openSecret(key, sealed), KEY_CHECK_PLAINTEXT) ? Effect.void : Effect.fail(new SecretKeyMismatch())

/** At start-up: a stored check value must open under the key (none stored yet is fine). */
export const checkStoredKey = (storage: StorageService, key: Uint8Array): Effect.Effect<void, SecretKeyMismatch | StorageError> =>
  Effect.flatMap(storage.channels.secretKeyCheck(), (stored) =>
    Option.match(stored, { onNone: () => Effect.void, onSome: (sealed) => expectKeyCheck(key, sealed) })
  )

/**
 * Before the first value is sealed under `key`: stores the key's check value when the store
 * has none; a check value of another key already stored → `SecretKeyMismatch`.
 */
export const claimKeyCheck = (storage: StorageService, key: Uint8Array): Effect.Effect<void, SecretKeyMismatch | StorageError> =>
  Effect.flatMap(storage.channels.claimSecretKeyCheck(sealSecret(key, KEY_CHECK_PLAINTEXT)), (stored) =>
    expectKeyCheck(key, stored)
  )
