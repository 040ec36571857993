import { Effect, Option } from "effect"
import type { Channel } from "../model/channels.js"
import type { ChannelRepository } from "../storage/ChannelRepository.js"
import { failChannelMessages } from "./outbox.js"
import type { MemoryState } from "./state.js"
import { ensureTemplateSyncDue } from "./templateSyncs.js"

/**
 * The channels repository of the memory store: the store's map of channels (oldest first
 * by insertion, which is `created_at` order within one process) and the secret-key check
 * value. Every method is synchronous, so each check and its write are atomic; an insert
 * makes its account's template sync record due at once (templateSyncs.ts); a delete
 * fails the channel's waiting messages of the send queue in the same step (at the time
 * of the delete: the method is given none).
 */
export const channelRepository = (state: MemoryState): ChannelRepository => {
  const rows = state.channels

  const ofOrganization = (organizationId: string) =>
    [...rows.values()].filter((row) => row.organization_id === organizationId).sort(oldestFirst)

  return {
    insert: (organizationId, { channel, access_token_sealed }, limit) =>
      Effect.sync(() => {
        for (const row of rows.values()) {
          if (row.channel.phone_number_id === channel.phone_number_id) return { _tag: "PhoneNumberIdTaken" } as const
        }
        if (ofOrganization(organizationId).length >= limit) return { _tag: "LimitReached", limit } as const
        rows.set(channel.uuid, { organization_id: organizationId, channel, access_token_sealed })
        ensureTemplateSyncDue(state, organizationId, channel.waba_id, channel.created_at)
        return { _tag: "Inserted", channel } as const
      }),
    list: (organizationId) => Effect.sync(() => ofOrganization(organizationId).map((row) => row.channel)),
    findById: (organizationId, id) =>
      Effect.sync(() => Option.filter(Option.fromNullable(rows.get(id)), (row) => row.organization_id === organizationId)),
    update: (organizationId, id, change) =>
      Effect.sync(() => {
        const row = rows.get(id)
        if (row === undefined || row.organization_id !== organizationId) return Option.none()
        const channel: Channel = {
          ...row.channel,
          ...(change.throughput_mps === undefined ? {} : { throughput_mps: change.throughput_mps }),
          ...(change.access_token === undefined ? {} : { access_token_last4: change.access_token.last4 }),
          updated_at: change.updated_at
        }
        rows.set(id, { ...row, channel, access_token_sealed: change.access_token?.sealed ?? row.access_token_sealed })
        return Option.some(channel)
      }),
    delete: (organizationId, id) =>
      Effect.sync(() => {
        if (rows.get(id)?.organization_id !== organizationId) return false
        rows.delete(id)
        failChannelMessages(state, organizationId, id, new Date().toISOString())
        return true
      }),
    findByPhoneNumberId: (phoneNumberId) =>
      Effect.sync(() => Option.fromNullable([...rows.values()].find((row) => row.channel.phone_number_id === phoneNumberId))),
    findByWabaId: (wabaId) =>
      Effect.sync(() => [...rows.values()].filter((row) => row.channel.waba_id === wabaId).sort(oldestFirst)),
    secretKeyCheck: () => Effect.sync(() => Option.fromNullable(state.secretKeyCheck)),
    claimSecretKeyCheck: (value) =>
      Effect.sync(() => {
        state.secretKeyCheck ??= value
        return state.secretKeyCheck
      }),
    resealSecretKeyCheck: (expected, value) =>
      Effect.sync(() => {
        if (state.secretKeyCheck !== expected) return false
        state.secretKeyCheck = value
        return true
      }),
    listSealedTokens: (after, limit) =>
      Effect.sync(() =>
        [...rows.values()]
          .filter((row) => after === null || row.channel.uuid > after)
          .sort((a, b) => (a.channel.uuid < b.channel.uuid ? -1 : a.channel.uuid > b.channel.uuid ? 1 : 0))
          .slice(0, Math.max(0, limit))
          .map((row) => ({ uuid: row.channel.uuid, access_token_sealed: row.access_token_sealed }))
      ),
    resealToken: (id, expected, sealed) =>
      Effect.sync(() => {
        const row = rows.get(id)
        if (row === undefined || row.access_token_sealed !== expected) return false
        rows.set(id, { ...row, access_token_sealed: sealed })
        return true
      })
  }
}

/** `created_at asc, uuid asc`: the order of channel lists (the first is the default). */
const oldestFirst = (a: { readonly channel: Channel }, b: { readonly channel: Channel }): number =>
  a.channel.created_at < b.channel.created_at ? -1 : a.channel.created_at > b.channel.created_at ? 1 : a.channel.uuid < b.channel.uuid ? -1 : a.channel.uuid > b.channel.uuid ? 1 : 0
