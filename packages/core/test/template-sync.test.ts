import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import {
  Channels,
  ChannelVerifier,
  changeTemplateStatus,
  type ChannelId,
  Core,
  generateSecretKey,
  MemoryStorage,
  MessageTransport,
  MetaTemplateApi,
  type MetaTemplateApiService,
  MetaTemplateCallFailed,
  type OrganizationId,
  Organizations,
  runLeasedPass,
  SecretKey,
  Storage,
  syncAccountTemplates,
  syncChannelTemplates,
  TEMPLATE_SYNC_INTERVAL_MS,
  type Template,
  templateSyncQueue,
  TemplateSyncRetryDelays,
  Templates
} from "@switchboard/core"
import { failureOf } from "./failure.js"

// The template sync (docs/templates-and-replies.md "Templates from Meta"): Meta's list
// read page by page and upserted per account; templates gone at Meta marked DELETED;
// compare-and-set; retries; the loop's queue and a sync asked for by hand.

const WABA_ID = "102290129340398"
const OTHER_WABA_ID = "102290129340399"

/** An entry of Meta's template list. */
const metaTemplate = (name: string, overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  name,
  language: "en_US",
  status: "APPROVED",
  category: "UTILITY",
  rejected_reason: "NONE",
  components: [{ type: "BODY", text: `Hello from ${name}` }],
  id: `id-${name}`,
  ...overrides
})

const failure = (code: string | null, http_status: number | null = 400) =>
  new MetaTemplateCallFailed({ reason: `Meta said ${code}`, provider_code: code, provider_subcode: null, http_status, network_error: null })

/**
 * A stub of Meta's template list: `templates` per account, served in pages of the asked
 * limit; `failures`, answered (one per call) before the list; `onList`, run at each call.
 */
const makeMeta = () => {
  const state = {
    templates: new Map<string, Array<unknown>>(),
    failures: [] as Array<MetaTemplateCallFailed>,
    calls: 0,
    tokens: [] as Array<string>,
    onList: Effect.void as Effect.Effect<void, never, Storage>
  }
  const api = (storage: Storage["Type"]): MetaTemplateApiService => ({
    list: (account, page) =>
      Effect.gen(function* () {
        state.calls++
        state.tokens.push(account.access_token)
        yield* Effect.provideService(state.onList, Storage, storage)
        const next = state.failures.shift()
        if (next !== undefined) return yield* Effect.fail(next)
        const all = state.templates.get(account.waba_id) ?? []
        const start = page.after === null ? 0 : Number(page.after)
        const end = start + page.limit
        return { templates: all.slice(start, end), after: end < all.length ? String(end) : null }
      }),
    submit: () => Effect.die("not used"),
    remove: () => Effect.die("not used")
  })
  return { state, api }
}

const acceptingVerifier = Layer.succeed(ChannelVerifier, { verify: () => Effect.succeed({ display_phone_number: "+1 555-078-3881" }) })
const transport = Layer.succeed(MessageTransport, { send: () => Effect.succeed({ provider_message_id: "wamid.1", status: "sent" as const }) })

type Meta = ReturnType<typeof makeMeta>

const run = <A, E>(body: (meta: Meta) => Effect.Effect<A, E, Layer.Layer.Success<typeof Core.layer> | Storage | MetaTemplateApi>) =>
  Effect.suspend(() => {
    const meta = makeMeta()
    const layer = Core.layerWithTransport(transport).pipe(
      Layer.provide(Layer.merge(SecretKey.layer(generateSecretKey()), acceptingVerifier)),
      Layer.provideMerge(MemoryStorage.layer)
    )
    return Effect.gen(function* () {
      const storage = yield* Storage
      return yield* body(meta).pipe(Effect.provideService(MetaTemplateApi, meta.api(storage)))
    }).pipe(Effect.provideService(TemplateSyncRetryDelays, [1, 1]), Effect.provide(layer))
  })

let phoneNumberIds = 0

const addChannel = (organizationId: OrganizationId, wabaId: string, access_token = "EAAGtemplatesync-0000000000000042") =>
  Effect.flatMap(Channels, (channels) =>
    channels.add(organizationId, { phone_number_id: String(106540352243000 + ++phoneNumberIds), waba_id: wabaId, access_token })
  )

const newOrganization = Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" }))

/** Every template of the organization, by name (and language when not en_US). */
const templatesOf = (organizationId: OrganizationId) =>
  Effect.map(Effect.flatMap(Storage, (storage) => storage.templates.list(organizationId, { page: 1, per_page: 100 })), ({ items }) => {
    const byName: Record<string, Template> = {}
    for (const template of items) byName[template.language === "en_US" ? template.name : `${template.name}/${template.language}`] = template
    return byName
  })

describe("syncAccountTemplates", () => {
  it.live("adds Meta's templates with their statuses, reasons and ids; reads every page; a second sync changes nothing", () =>
    run((meta) =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        yield* addChannel(org.id, WABA_ID)
        const many = Array.from({ length: 150 }, (_, index) => metaTemplate(`bulk_${index}`))
        meta.state.templates.set(WABA_ID, [
          metaTemplate("order_update"),
          metaTemplate("welcome"),
          metaTemplate("promo", { status: "REJECTED", category: "MARKETING", rejected_reason: "INVALID_FORMAT" }),
          ...many
        ])
        expect(yield* syncAccountTemplates(org.id, WABA_ID)).toEqual({ added: 153, updated: 0, deleted: 0, unchanged: 0 })
        // 153 templates in pages of 100: two list calls.
        expect(meta.state.calls).toBe(2)
        const stored = yield* Effect.map(
          Effect.flatMap(Storage, (storage) => storage.templates.list(org.id, { page: 1, per_page: 200 })),
          (page) => page.items
        )
        expect(stored).toHaveLength(153)
        const promo = stored.find((template) => template.name === "promo")!
        expect(promo).toMatchObject({
          status: "REJECTED",
          rejected_reason: "INVALID_FORMAT",
          category: "MARKETING",
          waba_id: WABA_ID,
          provider_template_id: "id-promo",
          problems: []
        })
        expect(stored.find((template) => template.name === "welcome")).toMatchObject({ status: "APPROVED", rejected_reason: null })
        expect(yield* syncAccountTemplates(org.id, WABA_ID)).toEqual({ added: 0, updated: 0, deleted: 0, unchanged: 153 })
      })
    ))

  it.live("updates changed templates (status through the status path), marks those gone DELETED, leaves hand-written and other accounts' alone", () =>
    run((meta) =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        yield* addChannel(org.id, WABA_ID)
        yield* addChannel(org.id, OTHER_WABA_ID)
        const handWritten = yield* (yield* Templates).create(org.id, {
          name: "gone_anyway",
          language: "en_US",
          category: "UTILITY",
          status: "APPROVED",
          components: [{ type: "BODY", text: "Written by hand" }]
        })
        meta.state.templates.set(WABA_ID, [metaTemplate("a"), metaTemplate("b"), metaTemplate("c"), metaTemplate("d")])
        meta.state.templates.set(OTHER_WABA_ID, [metaTemplate("a", { id: "other-a" })])
        yield* syncAccountTemplates(org.id, WABA_ID)
        yield* syncAccountTemplates(org.id, OTHER_WABA_ID)
        meta.state.templates.set(WABA_ID, [
          metaTemplate("a", { status: "PAUSED" }),
          metaTemplate("b", { components: [{ type: "BODY", text: "New words" }] }),
          metaTemplate("c", { category: "MARKETING" }),
          metaTemplate("e")
        ])
        expect(yield* syncAccountTemplates(org.id, WABA_ID)).toEqual({ added: 1, updated: 3, deleted: 1, unchanged: 0 })
        const all = yield* Effect.map(
          Effect.flatMap(Storage, (storage) => storage.templates.list(org.id, { page: 1, per_page: 100 })),
          (page) => page.items
        )
        const of = (name: string, wabaId: string | null = WABA_ID) => all.find((template) => template.name === name && template.waba_id === wabaId)!
        expect(of("a").status).toBe("PAUSED")
        expect(of("b").components).toEqual([{ type: "BODY", text: "New words" }])
        expect(of("b").status).toBe("APPROVED")
        expect(of("c").category).toBe("MARKETING")
        expect(of("d").status).toBe("DELETED")
        expect(of("e").status).toBe("APPROVED")
        // The other account's template of the same name, and the hand-written one, untouched.
        expect(of("a", OTHER_WABA_ID).status).toBe("APPROVED")
        expect(of("gone_anyway", null)).toEqual(handWritten)
        // A DELETED one stays so and counts unchanged.
        expect(yield* syncAccountTemplates(org.id, WABA_ID)).toEqual({ added: 0, updated: 0, deleted: 0, unchanged: 5 })
        expect((yield* templatesOf(org.id)).d?.status).toBe("DELETED")
      })
    ))

  it.live("a Meta template with a new id for a DELETED identity revives that row", () =>
    run((meta) =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        yield* addChannel(org.id, WABA_ID)
        meta.state.templates.set(WABA_ID, [metaTemplate("a")])
        yield* syncAccountTemplates(org.id, WABA_ID)
        const before = (yield* templatesOf(org.id)).a!
        meta.state.templates.set(WABA_ID, [])
        expect(yield* syncAccountTemplates(org.id, WABA_ID)).toEqual({ added: 0, updated: 0, deleted: 1, unchanged: 0 })
        meta.state.templates.set(WABA_ID, [metaTemplate("a", { id: "id-a-again", status: "PENDING" })])
        expect(yield* syncAccountTemplates(org.id, WABA_ID)).toEqual({ added: 0, updated: 1, deleted: 0, unchanged: 0 })
        const after = (yield* templatesOf(org.id)).a!
        expect(after).toMatchObject({ uuid: before.uuid, status: "PENDING", provider_template_id: "id-a-again" })
      })
    ))

  it.live("compare-and-set: a template changed after the list read began is left as it is", () =>
    run((meta) =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        yield* addChannel(org.id, WABA_ID)
        meta.state.templates.set(WABA_ID, [metaTemplate("a"), metaTemplate("b")])
        yield* syncAccountTemplates(org.id, WABA_ID)
        const { a } = yield* templatesOf(org.id)
        // While Meta answers the list, a status webhook moves `a` to PAUSED.
        meta.state.onList = Effect.gen(function* () {
          yield* Effect.sleep(5)
          yield* changeTemplateStatus(org.id, a!.uuid, { status: "PAUSED", rejected_reason: null, now: new Date().toISOString() }).pipe(Effect.orDie)
          meta.state.onList = Effect.void
        })
        meta.state.templates.set(WABA_ID, [metaTemplate("a", { status: "REJECTED", rejected_reason: "SCAM" }), metaTemplate("b", { status: "PAUSED" })])
        expect(yield* syncAccountTemplates(org.id, WABA_ID)).toEqual({ added: 0, updated: 1, deleted: 0, unchanged: 1 })
        const after = yield* templatesOf(org.id)
        expect(after.a?.status).toBe("PAUSED")
        expect(after.b?.status).toBe("PAUSED")
      })
    ))

  it.live("a retryable failure (130429, a 5xx) is tried again within the run; others end it, nothing changed", () =>
    run((meta) =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        yield* addChannel(org.id, WABA_ID)
        meta.state.templates.set(WABA_ID, [metaTemplate("a")])
        meta.state.failures.push(failure("130429"), failure(null, 503))
        expect(yield* syncAccountTemplates(org.id, WABA_ID)).toEqual({ added: 1, updated: 0, deleted: 0, unchanged: 0 })
        expect(meta.state.calls).toBe(3)
        // Three failures in a row: the tries run out.
        meta.state.templates.set(WABA_ID, [])
        meta.state.failures.push(failure("130429"), failure("130429"), failure("130429"))
        const exhausted = yield* failureOf(syncAccountTemplates(org.id, WABA_ID))
        expect(exhausted).toMatchObject({ _tag: "TemplateSyncFailed", waba_id: WABA_ID, provider_code: "130429" })
        // Not retryable: one call, the run ends; nothing marked DELETED.
        const calls = meta.state.calls
        meta.state.failures.push(failure("190"))
        const refused = yield* failureOf(syncAccountTemplates(org.id, WABA_ID))
        expect(refused).toMatchObject({ _tag: "TemplateSyncFailed", provider_code: "190" })
        expect(refused.message).not.toContain("EAAG")
        expect(meta.state.calls).toBe(calls + 1)
        expect((yield* templatesOf(org.id)).a?.status).toBe("APPROVED")
      })
    ))

  it.live("a template Switchboard's rules refuse is kept with its problems; one with no name is skipped; the sync goes on", () =>
    run((meta) =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        yield* addChannel(org.id, WABA_ID)
        meta.state.templates.set(WABA_ID, [
          metaTemplate("odd", { components: [{ type: "CAROUSEL", cards: [] }] }),
          metaTemplate("", { id: "nameless" }),
          "not even an object",
          metaTemplate("fine")
        ])
        expect(yield* syncAccountTemplates(org.id, WABA_ID)).toEqual({ added: 2, updated: 0, deleted: 0, unchanged: 0 })
        const { fine, odd } = yield* templatesOf(org.id)
        expect(fine?.problems).toEqual([])
        expect(odd?.status).toBe("APPROVED")
        expect(odd?.problems.length).toBeGreaterThan(0)
        expect(odd?.components).toEqual([{ type: "CAROUSEL", cards: [] }])
      })
    ))

  it.live("uses the token of an active channel of the account; with none, NoChannelForAccount", () =>
    run((meta) =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        const other = yield* newOrganization
        yield* addChannel(other.id, WABA_ID, "EAAGanotherorganization-00000000099")
        expect(yield* failureOf(syncAccountTemplates(org.id, WABA_ID))).toMatchObject({ _tag: "NoChannelForAccount", waba_id: WABA_ID })
        yield* addChannel(org.id, WABA_ID, "EAAGthisorganization-000000000007")
        yield* syncAccountTemplates(org.id, WABA_ID)
        expect(meta.state.tokens).toEqual(["EAAGthisorganization-000000000007"])
      })
    ))
})

describe("the template sync loop and a sync asked for by hand", () => {
  it.live("a new channel's account is due at once: a pass of the loop syncs it and records the outcome, due again an interval later", () =>
    run((meta) =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        meta.state.templates.set(WABA_ID, [metaTemplate("a"), metaTemplate("b", { status: "REJECTED", rejected_reason: "SCAM" })])
        const channel = yield* addChannel(org.id, WABA_ID)
        const queue = templateSyncQueue({ intervalMs: 60_000 })
        const ends = yield* runLeasedPass(queue, Date.now(), 30_000, 10)
        expect(ends.map((end) => end._tag)).toEqual(["Recorded"])
        const record = Option.getOrThrow(yield* (yield* Storage).templateSyncs.get(org.id, WABA_ID))
        expect(record).toMatchObject({ last_outcome: { added: 2, updated: 0, deleted: 0, unchanged: 0 }, last_error: null, lease: null })
        expect(Date.parse(record.next_due_at) - Date.parse(record.last_run_at!)).toBe(60_000)
        expect(yield* (yield* Channels).templateSync(org.id, channel.uuid)).toEqual({
          last_run_at: record.last_run_at,
          outcome: { added: 2, updated: 0, deleted: 0, unchanged: 0 },
          error: null
        })
        // Nothing due now.
        expect(yield* runLeasedPass(queue, Date.now(), 30_000, 10)).toEqual([])
      })
    ))

  it.live("a failed run is recorded with its error and due again an interval later; the channel stays active", () =>
    run((meta) =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        const channel = yield* addChannel(org.id, WABA_ID)
        meta.state.failures.push(failure("190"))
        const ends = yield* runLeasedPass(templateSyncQueue(), Date.now(), 30_000, 10)
        expect(ends.map((end) => end._tag)).toEqual(["Recorded"])
        const record = Option.getOrThrow(yield* (yield* Storage).templateSyncs.get(org.id, WABA_ID))
        expect(record.last_outcome).toBeNull()
        expect(record.last_error).toContain("Meta said 190")
        expect(Date.parse(record.next_due_at) - Date.parse(record.last_run_at!)).toBe(TEMPLATE_SYNC_INTERVAL_MS)
        expect((yield* (yield* Channels).get(org.id, channel.uuid)).status).toBe("active")
      })
    ))

  it.live("an account whose channels were all removed: its record keeps the error, due again an interval later", () =>
    run((meta) =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        const channel = yield* addChannel(org.id, WABA_ID)
        yield* (yield* Channels).remove(org.id, channel.uuid)
        const ends = yield* runLeasedPass(templateSyncQueue({ intervalMs: 1_000 }), Date.now(), 30_000, 10)
        expect(ends.map((end) => end._tag)).toEqual(["Recorded"])
        const record = Option.getOrThrow(yield* (yield* Storage).templateSyncs.get(org.id, WABA_ID))
        expect(record.last_error).toContain("no active channel on the WhatsApp Business Account")
        expect(Date.parse(record.next_due_at) - Date.parse(record.last_run_at!)).toBe(1_000)
        expect(meta.state.calls).toBe(0)
      })
    ))

  it.live("syncChannelTemplates runs at once and records; while another holds the record: TemplateSyncInProgress; unknown channel: RecordNotFound", () =>
    run((meta) =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        const channel = yield* addChannel(org.id, WABA_ID)
        meta.state.templates.set(WABA_ID, [metaTemplate("a")])
        expect(yield* syncChannelTemplates(org.id, channel.uuid)).toEqual({ added: 1, updated: 0, deleted: 0, unchanged: 0 })
        const storage = yield* Storage
        const record = Option.getOrThrow(yield* storage.templateSyncs.get(org.id, WABA_ID))
        expect(record).toMatchObject({ last_outcome: { added: 1, updated: 0, deleted: 0, unchanged: 0 }, lease: null })
        const now = new Date().toISOString()
        expect(yield* storage.templateSyncs.claimAccount(org.id, WABA_ID, { now, lease: "loop", leaseUntil: new Date(Date.now() + 60_000).toISOString() })).toBe(true)
        const calls = meta.state.calls
        expect(yield* failureOf(syncChannelTemplates(org.id, channel.uuid))).toMatchObject({ _tag: "TemplateSyncInProgress", waba_id: WABA_ID })
        expect(meta.state.calls).toBe(calls)
        expect(yield* failureOf(syncChannelTemplates(org.id, "00000000-0000-7000-8000-000000000000" as ChannelId))).toMatchObject({
          _tag: "RecordNotFound"
        })
      })
    ))

  it.live("syncChannelTemplates: Meta's failure is recorded on the record, then answered", () =>
    run((meta) =>
      Effect.gen(function* () {
        const org = yield* newOrganization
        const channel = yield* addChannel(org.id, WABA_ID)
        meta.state.failures.push(failure("100"))
        expect(yield* failureOf(syncChannelTemplates(org.id, channel.uuid))).toMatchObject({ _tag: "TemplateSyncFailed", provider_code: "100" })
        const record = Option.getOrThrow(yield* (yield* Storage).templateSyncs.get(org.id, WABA_ID))
        expect(record).toMatchObject({ last_outcome: null, lease: null })
        expect(record.last_error).toContain("Meta said 100")
      })
    ))
})
