import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, TestClock } from "effect"
import { BasicReplies, Core, MemoryStorage, Organizations, type BasicReplyId, type BasicReplyInput } from "@switchboard/core"
import { failureOf } from "./failure.js"

const TestLayer = Core.layer.pipe(Layer.provideMerge(MemoryStorage.layer))

const withOrganization = Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" }))

const hours: BasicReplyInput = { name: "Hours", trigger: "Opening hours", response: "We are open 9–17, Monday to Friday." }

/** The `{code, field}` of every issue of the InvalidInput a create fails with. */
const createIssues = (input: unknown) =>
  Effect.gen(function* () {
    const org = yield* withOrganization
    const error = yield* failureOf((yield* BasicReplies).create(org.id, input as BasicReplyInput))
    if (error._tag !== "InvalidInput") return expect.fail(`expected InvalidInput, got ${error._tag}`)
    return error.issues.map(({ code, field }) => ({ code, field }))
  })

describe("BasicReplies.create (docs/templates-and-replies.md)", () => {
  it.effect("creates a reply with trimmed fields and Clock timestamps", () =>
    Effect.gen(function* () {
      const org = yield* withOrganization
      yield* TestClock.setTime(Date.UTC(2026, 3, 1))
      const reply = yield* (yield* BasicReplies).create(org.id, { name: " Hours ", trigger: "  Opening hours ", response: " Open 9–17. " })
      expect(reply).toEqual({
        uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name: "Hours",
        trigger: "Opening hours",
        response: "Open 9–17.",
        created_at: "2026-04-01T00:00:00.000Z",
        updated_at: "2026-04-01T00:00:00.000Z"
      })
      expect(yield* (yield* BasicReplies).get(org.id, reply.uuid)).toEqual(reply)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("every field is required, name and trigger 1–255 characters, response 1–4096; all problems at once", () =>
    Effect.gen(function* () {
      expect(yield* createIssues({})).toEqual([
        { code: "required", field: "name" },
        { code: "required", field: "trigger" },
        { code: "required", field: "response" }
      ])
      expect(yield* createIssues({ name: " ", trigger: "\t", response: "" })).toEqual([
        { code: "required", field: "name" },
        { code: "required", field: "trigger" },
        { code: "required", field: "response" }
      ])
      expect(yield* createIssues({ name: "x".repeat(256), trigger: "y".repeat(256), response: "z".repeat(4097) })).toEqual([
        { code: "too_long", field: "name" },
        { code: "too_long", field: "trigger" },
        { code: "too_long", field: "response" }
      ])
      expect(yield* createIssues({ ...hours, trigger: 7, response: ["no"] })).toEqual([
        { code: "invalid_type", field: "trigger" },
        { code: "invalid_type", field: "response" }
      ])
      const org = yield* withOrganization
      const longest = yield* (yield* BasicReplies).create(org.id, { name: "x".repeat(255), trigger: "y".repeat(255), response: "z".repeat(4096) })
      expect(longest.response).toHaveLength(4096)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a trigger used in the organization, case-insensitively after trimming → UniqueValueTaken trigger_taken", () =>
    Effect.gen(function* () {
      const replies = yield* BasicReplies
      const org = yield* withOrganization
      yield* replies.create(org.id, hours)
      for (const trigger of ["Opening hours", "OPENING HOURS", "  opening hours "]) {
        const error = yield* failureOf(replies.create(org.id, { ...hours, name: "Other", trigger }))
        expect(error).toMatchObject({ _tag: "UniqueValueTaken", code: "trigger_taken", field: "trigger", value: trigger.trim() })
      }
      yield* replies.create(org.id, { ...hours, trigger: "Opening hours?" })
      yield* replies.create((yield* withOrganization).id, hours)
      expect((yield* replies.list(org.id, { page: 1, per_page: 10 })).total).toBe(2)
    }).pipe(Effect.provide(TestLayer)))
})

describe("BasicReplies.get, list and matchInbound", () => {
  it.effect("get → RecordNotFound (basic_reply) for an unknown uuid or another organization's reply", () =>
    Effect.gen(function* () {
      const replies = yield* BasicReplies
      const org = yield* withOrganization
      const reply = yield* replies.create(org.id, hours)
      const other = yield* withOrganization
      const error = yield* failureOf(replies.get(other.id, reply.uuid))
      expect(error).toMatchObject({ _tag: "RecordNotFound", missing: [{ resource: "basic_reply", uuid: reply.uuid }] })
      const unknown = yield* failureOf(replies.get(org.id, "0190f6b4-7b7e-7c4e-8a5d-1f2e3d4c5b6a" as BasicReplyId))
      expect(unknown._tag).toBe("RecordNotFound")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("list pages newest first", () =>
    Effect.gen(function* () {
      const replies = yield* BasicReplies
      const org = yield* withOrganization
      for (const trigger of ["a", "b", "c"]) {
        yield* replies.create(org.id, { ...hours, trigger })
        yield* TestClock.adjust("1 second")
      }
      const first = yield* replies.list(org.id, { page: 1, per_page: 2 })
      expect(first.total).toBe(3)
      expect(first.items.map((reply) => reply.trigger)).toEqual(["c", "b"])
      expect((yield* replies.list(org.id, { page: 2, per_page: 2 })).items.map((reply) => reply.trigger)).toEqual(["a"])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("matchInbound: the reply whose trigger equals the trimmed text, ignoring case; nothing else", () =>
    Effect.gen(function* () {
      const replies = yield* BasicReplies
      const org = yield* withOrganization
      const reply = yield* replies.create(org.id, hours)
      for (const text of ["Opening hours", "opening HOURS", "  Opening hours\n"]) {
        expect(yield* replies.matchInbound(org.id, text)).toEqual(Option.some(reply))
      }
      for (const text of ["Opening", "What are your opening hours?", "", "   "]) {
        expect(yield* replies.matchInbound(org.id, text)).toEqual(Option.none())
      }
      expect(yield* replies.matchInbound((yield* withOrganization).id, "Opening hours")).toEqual(Option.none())
    }).pipe(Effect.provide(TestLayer)))
})
