import { Option } from "effect"
import type { Channel, ChannelId, ChannelInsertOutcome, ChannelRepository, OrganizationId, StoredChannel } from "@switchboard/core"
import type { ChannelDocument } from "../internal/documents.js"
import { attempt, isDuplicateKey, onDuplicateKey } from "../internal/driver.js"
import { byId, eq, ofOrganization, owned } from "../internal/queries.js"
import { channelOf } from "../internal/records.js"
import type { Collections } from "../internal/schema.js"
import type { Usage } from "../internal/usage.js"
import { failChannelMessages } from "./outbox.js"
import { ensureTemplateSyncDue } from "./templateSyncs.js"

/**
 * `Storage.channels` on MongoDB: collection `channels` (`phone_number_id` unique across
 * every organization by a unique index) and `settings` (the secret-key check value).
 * `insert` keeps the channel limit like the plan limits (usage.ts): it reserves a slot of
 * the organization's `channels` counter with a conditional `$inc`, inserts, and releases
 * the slot when the insert fails (a `phone_number_id` taken meanwhile), then makes the
 * account's template sync record due at the channel's `created_at` (a write after the
 * insert: a crash between is repaired at the next start, templateSyncs.ts); `delete` releases
 * after the document is gone; `update` is one `findOneAndUpdate` `$set` of every field it
 * changes. A document without `throughput_mps` (written before it existed) reads as 50,
 * one without `status`, `paused_reason`, `paused_at` as `active`, `null`, `null`. `delete`
 * then fails the channel's waiting send-queue messages with `CHANNEL_REMOVED_FAILURE`
 * (outbox.ts `failChannelMessages`), a write after the delete: a crash between leaves
 * them waiting, and a dispatcher that claims them finds no channel.
 *
 * @category repositories
 */
export const channelRepository = (collections: Collections, usage: Usage): ChannelRepository => ({
  insert: (organizationId, { access_token_sealed, channel }, limit) =>
    attempt("channels.insert", async (): Promise<ChannelInsertOutcome> => {
      const byPhoneNumberId = { phone_number_id: eq(channel.phone_number_id) }
      if ((await collections.channels.countDocuments(byPhoneNumberId, { limit: 1 })) > 0) return { _tag: "PhoneNumberIdTaken" }
      await usage.ensureChannels(organizationId)
      const reservation = await usage.reserve(organizationId, "channels", 1, limit)
      if (!reservation.reserved) return { _tag: "LimitReached", limit }
      try {
        await collections.channels.insertOne(documentOf(organizationId, channel, access_token_sealed))
      } catch (error) {
        await usage.add(organizationId, "channels", -1)
        if (isDuplicateKey(error)) return { _tag: "PhoneNumberIdTaken" }
        throw error
      }
      await ensureTemplateSyncDue(collections, organizationId, channel.waba_id, channel.created_at)
      return { _tag: "Inserted", channel }
    }),
  list: (organizationId) =>
    attempt("channels.list", async () =>
      (await collections.channels.find(ofOrganization(organizationId), { sort: OLDEST_FIRST }).toArray()).map(channelOf)
    ),
  findById: (organizationId, id) =>
    attempt("channels.findById", async () =>
      Option.map(Option.fromNullable(await collections.channels.findOne(owned(organizationId, id))), storedOf)
    ),
  update: (organizationId, id, change) =>
    attempt("channels.update", async () => {
      const fields = {
        ...(change.throughput_mps === undefined ? {} : { throughput_mps: change.throughput_mps }),
        ...(change.access_token === undefined
          ? {}
          : { access_token_sealed: change.access_token.sealed, access_token_last4: change.access_token.last4 }),
        updated_at: change.updated_at
      }
      const document = await collections.channels.findOneAndUpdate(owned(organizationId, id), { $set: fields }, { returnDocument: "after" })
      return Option.map(Option.fromNullable(document), channelOf)
    }),
  delete: (organizationId, id) =>
    attempt("channels.delete", async () => {
      await usage.touch(organizationId)
      const { deletedCount } = await collections.channels.deleteOne(owned(organizationId, id))
      if (deletedCount === 0) return false
      await usage.add(organizationId, "channels", -deletedCount)
      await failChannelMessages(collections, organizationId, id, new Date().toISOString())
      return true
    }),
  findByPhoneNumberId: (phoneNumberId) =>
    attempt("channels.findByPhoneNumberId", async () =>
      Option.map(Option.fromNullable(await collections.channels.findOne({ phone_number_id: eq(phoneNumberId) })), storedOf)
    ),
  findByWabaId: (wabaId) =>
    attempt("channels.findByWabaId", async () =>
      (await collections.channels.find({ waba_id: eq(wabaId) }, { sort: OLDEST_FIRST }).toArray()).map(storedOf)
    ),
  secretKeyCheck: () =>
    attempt("channels.secretKeyCheck", async () =>
      Option.map(Option.fromNullable(await collections.settings.findOne(byId(SECRET_KEY_CHECK))), (setting) => setting.value)
    ),
  claimSecretKeyCheck: (value) =>
    attempt("channels.claimSecretKeyCheck", async () => {
      // Two first claims at once: one upsert inserts, the other fails on `_id` and reads it.
      await onDuplicateKey(
        () => collections.settings.updateOne(byId(SECRET_KEY_CHECK), { $setOnInsert: { value } }, { upsert: true }),
        () => undefined
      )
      const stored = await collections.settings.findOne(byId(SECRET_KEY_CHECK))
      if (stored === null) throw new Error("the secret-key check value vanished after it was stored")
      return stored.value
    }),
  resealSecretKeyCheck: (expected, value) =>
    attempt("channels.resealSecretKeyCheck", async () => {
      const { modifiedCount } = await collections.settings.updateOne(
        { _id: eq(SECRET_KEY_CHECK), value: eq(expected) },
        { $set: { value } }
      )
      return modifiedCount > 0
    }),
  listSealedTokens: (after, limit) =>
    attempt("channels.listSealedTokens", async () =>
      (
        await collections.channels
          .find(after === null ? {} : { _id: { $gt: after } }, { sort: { _id: 1 }, limit, projection: { _id: 1, access_token_sealed: 1 } })
          .toArray()
      ).map((d) => ({ uuid: d._id as ChannelId, access_token_sealed: d.access_token_sealed }))
    ),
  resealToken: (id, expected, sealed) =>
    attempt("channels.resealToken", async () => {
      const { modifiedCount } = await collections.channels.updateOne(
        { _id: eq(id), access_token_sealed: eq(expected) },
        { $set: { access_token_sealed: sealed } }
      )
      return modifiedCount > 0
    })
})

/** The `settings` `_id` of the secret-key check value. */
const SECRET_KEY_CHECK = "secret_key_check"

/** `created_at asc, _id asc`: channel lists, the first is the default. */
const OLDEST_FIRST = { created_at: 1, _id: 1 } as const

const documentOf = (organizationId: string, channel: Channel, sealed: string): ChannelDocument => ({
  _id: channel.uuid,
  organization_id: organizationId,
  provider: channel.provider,
  phone_number_id: channel.phone_number_id,
  display_phone_number: channel.display_phone_number,
  waba_id: channel.waba_id,
  access_token_sealed: sealed,
  access_token_last4: channel.access_token_last4,
  throughput_mps: channel.throughput_mps,
  status: channel.status,
  paused_reason: channel.paused_reason,
  paused_at: channel.paused_at,
  created_at: channel.created_at,
  updated_at: channel.updated_at
})

const storedOf = (document: ChannelDocument): StoredChannel => ({
  organization_id: document.organization_id as OrganizationId,
  channel: channelOf(document),
  access_token_sealed: document.access_token_sealed
})
