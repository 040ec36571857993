import type { Effect, Option } from "effect"
import type { Channel, ChannelId } from "../model/channels.js"
import type { OrganizationId } from "../model/organizations.js"
import type { StorageError } from "./errors.js"

/**
 * A channel as stored: the record, its organization and its access token sealed by
 * `sealSecret` (AES-256-GCM; never the plaintext).
 *
 * @category storage
 */
export interface StoredChannel {
  readonly organization_id: OrganizationId
  readonly channel: Channel
  readonly access_token_sealed: string
}

/**
 * Outcome of {@link ChannelRepository.insert}. Anything but `Inserted` wrote nothing.
 *
 * @category storage
 */
export type ChannelInsertOutcome =
  | { readonly _tag: "Inserted"; readonly channel: Channel }
  | { readonly _tag: "PhoneNumberIdTaken" }
  | { readonly _tag: "LimitReached"; readonly limit: number }

/**
 * The change of {@link ChannelRepository.update}: the fields given are written together with
 * `updated_at`; a new token comes sealed with its last four characters.
 *
 * @category storage
 */
export interface ChannelChange {
  readonly throughput_mps?: number
  readonly access_token?: { readonly sealed: string; readonly last4: string }
  readonly updated_at: string
}

/**
 * Channels (organizations' own WhatsApp numbers, docs/channels.md). Methods take the
 * organization id first, except the look-ups by `phone_number_id` and `waba_id` and the
 * secret-key check value, which read across organizations (provider webhooks are routed
 * by them before any organization is known; the key is the store's). Every method fails
 * only with {@link StorageError}.
 *
 * @category storage
 */
export interface ChannelRepository {
  /**
   * Inserts a channel (as given: `status` `active`, with no pacing state yet) in one atomic step with two checks: `phone_number_id` unique across
   * all organizations (`PhoneNumberIdTaken`, a unique index), and the organization below
   * `limit` channels (`LimitReached`). In the same step, the template sync record of the
   * organization and the channel's `waba_id` becomes due at the channel's `created_at`
   * (`TemplateSyncRepository.ensureDue`), so the account's templates are read from Meta
   * whichever process added the channel.
   */
  readonly insert: (
    organizationId: OrganizationId,
    stored: { readonly channel: Channel; readonly access_token_sealed: string },
    limit: number
  ) => Effect.Effect<ChannelInsertOutcome, StorageError>
  /** The organization's channels, oldest first (`created_at asc, uuid asc`): the first is the default. */
  readonly list: (organizationId: OrganizationId) => Effect.Effect<ReadonlyArray<Channel>, StorageError>
  /** The channel with this uuid, with its sealed token. */
  readonly findById: (
    organizationId: OrganizationId,
    id: ChannelId
  ) => Effect.Effect<Option.Option<StoredChannel>, StorageError>
  /**
   * Writes `change` to the organization's channel in one atomic write and returns the
   * channel as it now is; `None` (nothing written) when the organization has none with this uuid.
   */
  readonly update: (
    organizationId: OrganizationId,
    id: ChannelId,
    change: ChannelChange
  ) => Effect.Effect<Option.Option<Channel>, StorageError>
  /**
   * Deletes the channel and, in the same atomic step, fails its waiting outbox messages
   * (`queued`, `sending`) with `CHANNEL_REMOVED_FAILURE` (OutboxRepository.ts);
   * `false` when the organization has none with this uuid.
   */
  readonly delete: (organizationId: OrganizationId, id: ChannelId) => Effect.Effect<boolean, StorageError>
  /** The channel with this `phone_number_id`, whichever organization owns it. */
  readonly findByPhoneNumberId: (phoneNumberId: string) => Effect.Effect<Option.Option<StoredChannel>, StorageError>
  /** Every channel with this `waba_id`, of any organization, oldest first. */
  readonly findByWabaId: (wabaId: string) => Effect.Effect<ReadonlyArray<StoredChannel>, StorageError>
  /** The stored secret-key check value (a sealed known constant), when one was stored. */
  readonly secretKeyCheck: () => Effect.Effect<Option.Option<string>, StorageError>
  /**
   * Stores `value` as the secret-key check value unless one is stored already (atomic
   * insert-if-absent), and returns the value stored afterwards: `value` or the earlier one.
   */
  readonly claimSecretKeyCheck: (value: string) => Effect.Effect<string, StorageError>
  /**
   * Replaces the secret-key check value with `value` only while it is `expected` (a
   * compare-and-set): `true` when written; `false` when none is stored or another value is.
   */
  readonly resealSecretKeyCheck: (expected: string, value: string) => Effect.Effect<boolean, StorageError>
  /**
   * Up to `limit` channels of every organization with their sealed tokens, by `uuid`
   * ascending, strictly after `after` (from the first when `null`): `secret-key rotate`
   * reads them in pages.
   */
  readonly listSealedTokens: (
    after: ChannelId | null,
    limit: number
  ) => Effect.Effect<ReadonlyArray<SealedChannelToken>, StorageError>
  /**
   * Sets the channel's sealed token to `sealed` only while it is still `expected` (a
   * compare-and-set; `updated_at` and the token's last 4 unchanged): `true` when written,
   * `false` (nothing written) when the channel is gone or its token changed meanwhile.
   */
  readonly resealToken: (id: ChannelId, expected: string, sealed: string) => Effect.Effect<boolean, StorageError>
}

/**
 * A channel's sealed access token, as `secret-key rotate` reads them.
 *
 * @category storage
 */
export interface SealedChannelToken {
  readonly uuid: ChannelId
  readonly access_token_sealed: string
}
