import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Storage, type BasicReply, type BasicReplyId, type OrganizationId } from "@switchboard/core"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { insertOrganization, runner } from "./support.js"

const { instant } = fixtures

/** A reply create request with a fresh uuid. */
const replyInput = (trigger: string, now = instant(0), name = `Reply to ${trigger}`) => ({
  uuid: fixtures.uuid() as BasicReplyId,
  name,
  trigger,
  response: `You said ${trigger}`,
  now
})

/** Creates a reply and expects it created; returns it. */
const createReply = (organizationId: OrganizationId, trigger: string, now = instant(0)) =>
  Effect.gen(function* () {
    const { basicReplies } = yield* Storage
    const outcome = yield* basicReplies.create(organizationId, replyInput(trigger, now))
    if (outcome._tag !== "Created") return expect.fail(`expected Created, got ${outcome._tag}`)
    return outcome.reply
  })

/**
 * Contract of `Storage.basicReplies`: triggers unique per organization case-insensitively
 * after trimming, look-up by trigger, newest-first lists, tenant isolation
 * (docs/templates-and-replies.md "Basic replies"; docs/messaging.md "Auto-reply").
 */
export const basicRepliesContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("basic replies", () => {
    it.effect("creates a reply and finds it by uuid", () =>
      run(
        Effect.gen(function* () {
          const { basicReplies } = yield* Storage
          const org = yield* insertOrganization()
          const input = replyInput("Opening hours", instant(1), "Hours")
          const reply: BasicReply = {
            uuid: input.uuid,
            name: "Hours",
            trigger: "Opening hours",
            response: "You said Opening hours",
            created_at: instant(1),
            updated_at: instant(1)
          }
          expect(yield* basicReplies.create(org.id, input)).toEqual({ _tag: "Created", reply })
          expect(yield* basicReplies.findById(org.id, input.uuid)).toEqual(Option.some(reply))
          expect(yield* basicReplies.findById(org.id, fixtures.uuid() as BasicReplyId)).toEqual(Option.none())
        })
      ))

    it.effect("create → TriggerTaken for a trigger used, case-insensitively after trimming; names may repeat", () =>
      run(
        Effect.gen(function* () {
          const { basicReplies } = yield* Storage
          const org = yield* insertOrganization()
          const hours = yield* createReply(org.id, "Hours")
          for (const trigger of ["Hours", "HOURS", " hours "]) {
            expect(yield* basicReplies.create(org.id, replyInput(trigger, instant(1), "Other"))).toEqual({ _tag: "TriggerTaken" })
          }
          const sameName = yield* basicReplies.create(org.id, replyInput("prices", instant(2), hours.name))
          expect(sameName._tag).toBe("Created")
          expect((yield* basicReplies.list(org.id, { page: 1, per_page: 10 })).total).toBe(2)
        })
      ))

    it.effect("findByTrigger matches the trimmed text ignoring case, and nothing else", () =>
      run(
        Effect.gen(function* () {
          const { basicReplies } = yield* Storage
          const org = yield* insertOrganization()
          const reply = yield* createReply(org.id, "Opening Hours")
          for (const text of ["Opening Hours", "opening hours", "  OPENING HOURS\n"]) {
            expect(yield* basicReplies.findByTrigger(org.id, text)).toEqual(Option.some(reply))
          }
          for (const text of ["opening", "opening hours?", "what are your opening hours", ""]) {
            expect(yield* basicReplies.findByTrigger(org.id, text)).toEqual(Option.none())
          }
        })
      ))

    it.effect("lists newest first (created_at desc, uuid desc); a page past the end is empty", () =>
      run(
        Effect.gen(function* () {
          const { basicReplies } = yield* Storage
          const org = yield* insertOrganization()
          expect(yield* basicReplies.list(org.id, { page: 1, per_page: 20 })).toEqual({ items: [], total: 0 })
          const a = yield* createReply(org.id, "a", instant(1))
          const c = yield* createReply(org.id, "c", instant(3))
          const b = yield* createReply(org.id, "b", instant(2))
          const tied = [yield* createReply(org.id, "d", instant(4)), yield* createReply(org.id, "e", instant(4))]
          const [d, e] = [...tied].sort((x, y) => (x.uuid < y.uuid ? 1 : -1))
          const expected = [d, e, c, b, a]
          expect(yield* basicReplies.list(org.id, { page: 1, per_page: 20 })).toEqual({ items: expected, total: 5 })
          expect(yield* basicReplies.list(org.id, { page: 2, per_page: 2 })).toEqual({ items: expected.slice(2, 4), total: 5 })
          expect(yield* basicReplies.list(org.id, { page: 9, per_page: 2 })).toEqual({ items: [], total: 5 })
        })
      ))

    it.effect("tenant isolation: another organization cannot find or list a reply, and may use the same trigger", () =>
      run(
        Effect.gen(function* () {
          const { basicReplies } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const mine = yield* createReply(org.id, "hours")
          expect(yield* basicReplies.findById(other.id, mine.uuid)).toEqual(Option.none())
          expect(yield* basicReplies.findByTrigger(other.id, "hours")).toEqual(Option.none())
          expect(yield* basicReplies.list(other.id, { page: 1, per_page: 10 })).toEqual({ items: [], total: 0 })
          const theirs = yield* createReply(other.id, "HOURS")
          expect(yield* basicReplies.findByTrigger(other.id, "hours")).toEqual(Option.some(theirs))
          expect(yield* basicReplies.findByTrigger(org.id, "hours")).toEqual(Option.some(mine))
          expect(yield* basicReplies.list(org.id, { page: 1, per_page: 10 })).toEqual({ items: [mine], total: 1 })
        })
      ))

    it.effect("findByTrigger calls asked together each answer their own organization's reply to their own text", () =>
      run(
        Effect.gen(function* () {
          const { basicReplies } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const mine = yield* createReply(org.id, "hours")
          const theirs = yield* createReply(other.id, "Hours")
          const prices = yield* createReply(other.id, "prices")
          const asked: ReadonlyArray<readonly [OrganizationId, string]> = [
            [other.id, " HOURS"],
            [org.id, "prices"],
            [org.id, "hours"],
            [other.id, "prices"],
            [other.id, "hours"]
          ]
          const found = yield* Effect.all(
            asked.map(([organizationId, text]) => basicReplies.findByTrigger(organizationId, text)),
            { concurrency: "unbounded" }
          )
          expect(found).toEqual([Option.some(theirs), Option.none(), Option.some(mine), Option.some(prices), Option.some(theirs)])
        })
      ))
  })
}
