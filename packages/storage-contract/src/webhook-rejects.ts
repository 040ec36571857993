import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Storage, type OrganizationId, type WebhookReject } from "@switchboard/core"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { insertOrganization, runner } from "./support.js"

const { instant } = fixtures

const reject = (organizationId: OrganizationId | null, receivedAt: string, overrides: Partial<WebhookReject> = {}): WebhookReject => ({
  id: fixtures.uuid(),
  received_at: receivedAt,
  organization_id: organizationId,
  phone_number_id: organizationId === null ? null : "1234567890",
  reason: "text: required",
  item: { id: "wamid.1", from: "14155550100", type: "text", text: { body: "" } },
  ...overrides
})

/**
 * Contract of `Storage.webhookRejects` (docs/whatsapp-webhooks.md "Refused parts"): the
 * raw item round-trips as JSON, lists are newest first, of one organization or of all,
 * limited, and `prune` deletes what was received before a time.
 */
export const webhookRejectsContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("webhook rejects", () => {
    it.effect("insert then list: every field as stored, the raw item as JSON, newest first (received_at desc, id desc)", () =>
      run(
        Effect.gen(function* () {
          const { webhookRejects } = yield* Storage
          const org = yield* insertOrganization()
          expect(yield* webhookRejects.list({ limit: 10 })).toEqual([])
          const odd = { $set: "a key MongoDB refuses", "dotted.key": [1, null, { nested: true }], text: "ünïcødé" }
          const a = reject(org.id, instant(1))
          const b = reject(null, instant(2), { item: odd, reason: "not a WhatsApp Business Account notification" })
          const [c, d] = [reject(org.id, instant(3)), reject(org.id, instant(3))].sort((x, y) => (x.id < y.id ? 1 : -1))
          yield* webhookRejects.insert([a, b])
          yield* webhookRejects.insert([c!, d!])
          yield* webhookRejects.insert([])
          expect(yield* webhookRejects.list({ limit: 10 })).toEqual([c, d, b, a])
          expect(yield* webhookRejects.list({ limit: 2 })).toEqual([c, d])
        })
      ))

    it.effect("an id already stored is skipped: the first reject is kept, the others of the batch are stored", () =>
      run(
        Effect.gen(function* () {
          const { webhookRejects } = yield* Storage
          const first = reject(null, instant(1))
          yield* webhookRejects.insert([first])
          const other = reject(null, instant(2))
          yield* webhookRejects.insert([{ ...first, received_at: instant(3), reason: "again" }, other])
          expect(yield* webhookRejects.list({ limit: 10 })).toEqual([other, first])
        })
      ))

    it.effect("list of one organization leaves out the others' and the unrouted ones", () =>
      run(
        Effect.gen(function* () {
          const { webhookRejects } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const mine = reject(org.id, instant(1))
          yield* webhookRejects.insert([mine, reject(other.id, instant(2)), reject(null, instant(3))])
          expect(yield* webhookRejects.list({ organizationId: org.id, limit: 10 })).toEqual([mine])
          expect((yield* webhookRejects.list({ limit: 10 })).length).toBe(3)
        })
      ))

    it.effect("prune deletes what was received before the given time and says how many", () =>
      run(
        Effect.gen(function* () {
          const { webhookRejects } = yield* Storage
          const kept = reject(null, instant(5))
          yield* webhookRejects.insert([reject(null, instant(1)), reject(null, instant(4)), kept])
          expect(yield* webhookRejects.prune(instant(5))).toBe(2)
          expect(yield* webhookRejects.list({ limit: 10 })).toEqual([kept])
          expect(yield* webhookRejects.prune(instant(5))).toBe(0)
        })
      ))
  })
}
