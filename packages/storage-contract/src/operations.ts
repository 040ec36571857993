import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type OutboxSummaryRow, Storage } from "@switchboard/core"
import { append, inboundRequest, outboundRequest } from "./chat-support.js"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { accountFailure, at, claimOnly, enqueue, failure, pauseChannel, recipient, recorded, requeued, sent } from "./outbox-support.js"
import { insertChannel, insertOrganization, runner } from "./support.js"

/** `outbox.summary()`, sorted by channel (the row without a channel first): the contract fixes no order. */
const summary = () =>
  Effect.flatMap(Storage, ({ outbox }) => outbox.summary()).pipe(
    Effect.map((rows) => [...rows].sort((a, b) => (a.channel_id ?? "").localeCompare(b.channel_id ?? "")))
  )

/** A summary row, as {@link summary} sorts them. */
const row = (
  channel: { readonly uuid: OutboxSummaryRow["channel_id"] & string } | null,
  channel_status: OutboxSummaryRow["channel_status"],
  queued: number,
  sending: number
): OutboxSummaryRow => ({ channel_id: channel?.uuid ?? null, channel_status, queued, sending })

/** Sorts expected rows like {@link summary}. */
const rows = (...expected: ReadonlyArray<OutboxSummaryRow>) =>
  [...expected].sort((a, b) => (a.channel_id ?? "").localeCompare(b.channel_id ?? ""))

/**
 * Contract of what operators read of a store (docs/storage.md): `Storage.health()` (the
 * store answers; a fresh store's schema is current) and `outbox.summary()` (the waiting
 * messages of the send queue per channel, across organizations, and the paused channels).
 */
export const operationsContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("health", () => {
    it.effect("a fresh store answers with its schema current", () =>
      run(
        Effect.gen(function* () {
          const storage = yield* Storage
          expect(yield* storage.health()).toEqual({ migrations_current: true })
          yield* insertOrganization()
          expect((yield* storage.health()).migrations_current).toBe(true)
        })
      ))
  })

  describe("outbox: summary", () => {
    it.effect("an empty store, and a store whose channels are active and idle, give []", () =>
      run(
        Effect.gen(function* () {
          expect(yield* summary()).toEqual([])
          const org = yield* insertOrganization()
          yield* insertChannel(org.id)
          expect(yield* summary()).toEqual([])
        })
      ))

    it.effect("queued and sending counted per channel across organizations; messages without a channel give the null row", () =>
      run(
        Effect.gen(function* () {
          const [a, b] = [yield* insertOrganization(), yield* insertOrganization()]
          const [channelA, channelB] = [yield* insertChannel(a.id), yield* insertChannel(b.id)]
          const [a1, a2, b1, b2] = [yield* recipient(a.id, 1), yield* recipient(a.id, 2), yield* recipient(b.id, 1), yield* recipient(b.id, 2)]
          // Channel A: one sending (claimed at once) and two queued behind it in its lane, one queued in another lane.
          yield* enqueue(a.id, a1, { channel: channelA, claim: "lease-a1" })
          yield* enqueue(a.id, a1, { channel: channelA, at: 1 })
          yield* enqueue(a.id, a1, { channel: channelA, at: 2, claim: "lease-a1-busy" })
          yield* enqueue(a.id, a2, { channel: channelA, class: "broadcast" })
          // Channel B: one sending, one queued.
          yield* enqueue(b.id, b1, { channel: channelB, claim: { bypass: "lease-b1" } })
          yield* enqueue(b.id, b2, { channel: channelB })
          // No channel, in both organizations: one sending, two queued.
          yield* enqueue(a.id, a2)
          yield* enqueue(b.id, b1, { claim: "lease-b1-none" })
          yield* enqueue(b.id, b2, { class: "broadcast" })
          expect(yield* summary()).toEqual(rows(row(null, null, 2, 1), row(channelA, "active", 3, 1), row(channelB, "active", 1, 1)))
        })
      ))

    it.effect("sent, failed, inbound and messages outside the send queue are not counted; a deleted channel's messages leave", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const to = yield* recipient(org.id, 1)
          const first = yield* enqueue(org.id, to, { channel, claim: "lease-1" })
          yield* recorded(1, { message: first, lease: "lease-1" }, sent("wamid.1"))
          const second = yield* enqueue(org.id, yield* recipient(org.id, 2), { channel, claim: { bypass: "lease-2" } })
          yield* recorded(1, { message: second, lease: "lease-2" }, { _tag: "Failed", failure, attempts: 1 })
          yield* append(org.id, inboundRequest(fixtures.phone(3), { channelUuid: channel.uuid, providerId: "wamid.in" }))
          // Written without `outbox`: stored queued, never part of the send queue.
          yield* append(org.id, outboundRequest(to.id, { channelUuid: channel.uuid }))
          yield* append(org.id, outboundRequest(to.id))
          // A deleted channel's waiting messages fail with it.
          const removed = yield* insertChannel(org.id)
          yield* enqueue(org.id, to, { channel: removed })
          expect(yield* summary()).toEqual([row(removed, "active", 1, 0)])
          expect(yield* Effect.flatMap(Storage, ({ channels }) => channels.delete(org.id, removed.uuid))).toBe(true)
          expect(yield* summary()).toEqual([])
        })
      ))

    it.effect("a paused channel appears with channel_status paused: with its waiting messages, and with zeros once none waits", () =>
      run(
        Effect.gen(function* () {
          const { outbox } = yield* Storage
          const [org, other] = [yield* insertOrganization(), yield* insertOrganization()]
          const busy = yield* insertChannel(org.id)
          const idle = yield* insertChannel(other.id)
          yield* pauseChannel(org.id, busy, 1)
          yield* enqueue(org.id, yield* recipient(org.id, 1), { channel: busy, at: 2 })
          const lone = yield* pauseChannel(other.id, idle, 1)
          expect(yield* summary()).toEqual(rows(row(busy, "paused", 2, 0), row(idle, "paused", 1, 0)))
          expect((yield* outbox.cancel(other.id, lone.uuid, accountFailure, at(3)))._tag).toBe("Done")
          expect(yield* summary()).toEqual(rows(row(busy, "paused", 2, 0), row(idle, "paused", 0, 0)))
          yield* outbox.resumeChannel(other.id, idle.uuid, at(4))
          expect(yield* summary()).toEqual([row(busy, "paused", 2, 0)])
        })
      ))

    it.effect("a message moves between the counts as it goes: sending, queued again, then gone once it settles", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const message = yield* enqueue(org.id, yield* recipient(org.id, 1), { channel, claim: "lease-1" })
          expect(yield* summary()).toEqual([row(channel, "active", 0, 1)])
          yield* recorded(1, { message, lease: "lease-1" }, requeued(2, { attempts: 1, failure }))
          expect(yield* summary()).toEqual([row(channel, "active", 1, 0)])
          yield* claimOnly(2, message, { lease: "lease-2" })
          expect(yield* summary()).toEqual([row(channel, "active", 0, 1)])
          yield* recorded(3, { message, lease: "lease-2" }, sent("wamid.1"))
          expect(yield* summary()).toEqual([])
        })
      ))
  })
}
