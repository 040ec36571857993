import { Effect, Option } from "effect"
import { SecretKeyMismatch, SecretKeyRotationNeedsTwoKeys } from "../model/channelErrors.js"
import type { ChannelId } from "../model/channels.js"
import type { WebhookEndpointId } from "../model/webhooks.js"
import type { SealedChannelToken } from "../storage/ChannelRepository.js"
import type { StorageError } from "../storage/errors.js"
import type { SealedWebhookSecrets } from "../storage/WebhookRepository.js"
import { Storage, type StorageService } from "../storage/Storage.js"
import { decryptionKeysOf, SecretKey } from "./SecretKey.js"
import { isSealedUnder, openSecret, sealSecret } from "./secretBox.js"
import { checkStoredKey, opensKeyCheck, sealKeyCheck } from "./secretKeyCheck.js"

// `secret-key rotate` (docs/deployment.md "Rotating the secret key"): every value sealed at
// rest — channel access tokens, webhook endpoints' current and previous signing secrets —
// sealed again under the first configured key, each with a compare-and-set on the sealed
// text read, and the store's key check value last. Values already under the first key are
// left alone, so a run interrupted anywhere and run again finishes the work (idempotent and
// resumable); servers started with the same keys keep serving meanwhile, since every key
// opens every value and the key check passes under any of them.

/** Rows read per page. */
const PAGE_SIZE = 200

/** Passes over the store at most: a pass runs again only when a compare-and-set lost to another write. */
const MAX_PASSES = 10

/**
 * What `rotateSecretKey` did: how many channel tokens and webhook signing secrets (current
 * and previous counted apart) it sealed again under the first key; how many were already
 * under it; how many no configured key opens (left as they are: the servers cannot use them
 * either); and the key check value: `resealed`, `current` (already under the first key) or
 * `none` (nothing was ever sealed in this store).
 *
 * @category secrets
 */
export interface SecretKeyRotationReport {
  readonly channel_tokens_resealed: number
  readonly webhook_secrets_resealed: number
  readonly already_current: number
  readonly unreadable: number
  readonly key_check: "resealed" | "current" | "none"
}

interface Tally {
  channel_tokens_resealed: number
  webhook_secrets_resealed: number
  already_current: number
  unreadable: number
  /** Compare-and-sets that lost to another write in this pass: the pass must run again. */
  lost: number
}

/**
 * One sealed value: left when already under `first` or unreadable; else sealed again
 * under `first` through `write` (a compare-and-set); counts into `tally`.
 */
const reseal = (
  keys: ReadonlyArray<Uint8Array>,
  sealed: string,
  tally: Tally,
  kind: "channel_tokens_resealed" | "webhook_secrets_resealed",
  write: (resealed: string) => Effect.Effect<boolean, StorageError>
): Effect.Effect<void, StorageError> => {
  const first = keys[0]!
  if (isSealedUnder(first, sealed)) {
    tally.already_current++
    return Effect.void
  }
  const plaintext = openSecret(keys, sealed)
  if (Option.isNone(plaintext)) {
    tally.unreadable++
    return Effect.void
  }
  return Effect.map(write(sealSecret(first, plaintext.value)), (written) => {
    if (written) tally[kind]++
    else tally.lost++
  })
}

/** One pass over every channel token and webhook secret. */
const pass = (storage: StorageService, keys: ReadonlyArray<Uint8Array>) =>
  Effect.gen(function* () {
    const tally: Tally = { channel_tokens_resealed: 0, webhook_secrets_resealed: 0, already_current: 0, unreadable: 0, lost: 0 }
    let afterChannel: ChannelId | null = null
    for (;;) {
      const page: ReadonlyArray<SealedChannelToken> = yield* storage.channels.listSealedTokens(afterChannel, PAGE_SIZE)
      for (const row of page) {
        yield* reseal(keys, row.access_token_sealed, tally, "channel_tokens_resealed", (resealed) =>
          storage.channels.resealToken(row.uuid, row.access_token_sealed, resealed)
        )
      }
      if (page.length < PAGE_SIZE) break
      afterChannel = page[page.length - 1]!.uuid
    }
    let afterEndpoint: WebhookEndpointId | null = null
    for (;;) {
      const page: ReadonlyArray<SealedWebhookSecrets> = yield* storage.webhooks.listSealedSecrets(afterEndpoint, PAGE_SIZE)
      for (const row of page) {
        yield* reseal(keys, row.secret_sealed, tally, "webhook_secrets_resealed", (resealed) =>
          storage.webhooks.resealSecret(row.uuid, "secret", row.secret_sealed, resealed)
        )
        const previous = row.previous_secret_sealed
        if (previous !== null) {
          yield* reseal(keys, previous, tally, "webhook_secrets_resealed", (resealed) =>
            storage.webhooks.resealSecret(row.uuid, "previous_secret", previous, resealed)
          )
        }
      }
      if (page.length < PAGE_SIZE) break
      afterEndpoint = page[page.length - 1]!.uuid
    }
    return tally
  })

/**
 * Seals every channel token and webhook signing secret (current and previous) again under
 * the first configured key, then the key check value (docs/deployment.md "Rotating the
 * secret key"): needs at least two keys (`SecretKeyRotationNeedsTwoKeys`, nothing changed);
 * the store's check value must open under one of them (`SecretKeyMismatch`, nothing
 * changed). Each value is written with a compare-and-set on the sealed text read, so a
 * value a server changed meanwhile (a new token, a rotated webhook secret) is never
 * overwritten: the pass runs again for it. Idempotent and resumable: run it again after an
 * interruption. Servers started with the same keys may serve while it runs. Never logs or
 * answers a secret.
 *
 * @category secrets
 */
export const rotateSecretKey: Effect.Effect<
  SecretKeyRotationReport,
  SecretKeyRotationNeedsTwoKeys | SecretKeyMismatch | StorageError,
  Storage
> = Effect.gen(function* () {
  const storage = yield* Storage
  const keys = decryptionKeysOf(yield* SecretKey)
  if (keys.length < 2) return yield* new SecretKeyRotationNeedsTwoKeys({ configured: keys.length })
  yield* checkStoredKey(storage, keys)
  const total = { channel_tokens_resealed: 0, webhook_secrets_resealed: 0, already_current: 0, unreadable: 0 }
  for (let passes = 1; ; passes++) {
    const tally = yield* pass(storage, keys)
    total.channel_tokens_resealed += tally.channel_tokens_resealed
    total.webhook_secrets_resealed += tally.webhook_secrets_resealed
    // The last pass's view: what is current and unreadable now.
    total.already_current = tally.already_current
    total.unreadable = tally.unreadable
    if (tally.lost === 0 || passes >= MAX_PASSES) break
  }
  // The check value last: a server started with the first key alone passes its check only
  // once every value opens under that key.
  const check = yield* storage.channels.secretKeyCheck()
  if (Option.isNone(check)) return { ...total, key_check: "none" as const }
  if (isSealedUnder(keys[0]!, check.value) && opensKeyCheck(keys[0]!, check.value)) return { ...total, key_check: "current" as const }
  if (!opensKeyCheck(keys, check.value)) return yield* new SecretKeyMismatch()
  if (!(yield* storage.channels.resealSecretKeyCheck(check.value, sealKeyCheck(keys[0]!)))) {
    // Another rotation wrote it meanwhile: fine when it is under the first key now.
    const now = yield* storage.channels.secretKeyCheck()
    if (!Option.exists(now, (value) => opensKeyCheck(keys[0]!, value))) return yield* new SecretKeyMismatch()
  }
  return { ...total, key_check: "resealed" as const }
})
