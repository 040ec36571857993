import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import {
  Storage,
  type OrganizationId,
  type Template,
  type TemplateContent,
  type TemplateId,
  TemplateStatus
} from "@switchboard/core"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { insertOrganization, runner } from "./support.js"

const { instant } = fixtures

/** Template content with every field set; `overrides` replace fields. */
const content = (overrides: Partial<TemplateContent> = {}): TemplateContent => ({
  waba_id: null,
  provider_template_id: null,
  problems: [],
  name: "order_update",
  language: "en_US",
  category: "UTILITY",
  status: "APPROVED",
  components: [{ type: "BODY", text: "Hi {{1}}, order {{2}} has shipped." }],
  ...overrides
})

/** Every component kind, with and without optional fields: must come back as written. */
const richComponents: TemplateContent["components"] = [
  { type: "HEADER", format: "TEXT", text: "Order {{1}}", example: { header_text: ["#1234"] } },
  { type: "BODY", text: "Hi {{1}}, your order {{2}} ships {{3}}.", example: { body_text: [["Ada", "#1234", "today"]] } },
  { type: "FOOTER", text: "Reply STOP to opt out" },
  {
    type: "BUTTONS",
    buttons: [
      { type: "URL", text: "Track", url: "https://example.com/track/{{1}}", example: ["https://example.com/track/1234"] },
      { type: "QUICK_REPLY", text: "Thanks" },
      { type: "PHONE_NUMBER", text: "Call us", phone_number: "+14155550100" }
    ]
  }
]

/** Creates a template and expects it written; returns it. */
const createTemplate = (organizationId: OrganizationId, overrides: Partial<TemplateContent> = {}, now = instant(0)) =>
  Effect.gen(function* () {
    const { templates } = yield* Storage
    const outcome = yield* templates.create(organizationId, { uuid: fixtures.uuid() as TemplateId, content: content(overrides), now })
    if (outcome._tag !== "Written") return expect.fail(`expected Written, got ${outcome._tag}`)
    return outcome.template
  })

/**
 * Contract of `Storage.templates`: identity (name by nameKey + exact language) unique per
 * organization, components stored as given, update, newest-first lists, tenant isolation
 * (docs/templates-and-replies.md "Template rules"); Meta's statuses and `rejected_reason`
 * (`updateStatus`, docs/whatsapp-webhooks.md "Template statuses").
 */
export const templatesContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("templates", () => {
    it.effect("creates a template and finds it by uuid, components exactly as written", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const uuid = fixtures.uuid() as TemplateId
          const written = content({ components: richComponents, category: "MARKETING", status: "PENDING" })
          const template: Template = { uuid, ...written, rejected_reason: null, created_at: instant(1), updated_at: instant(1) }
          expect(yield* templates.create(org.id, { uuid, content: written, now: instant(1) })).toEqual({ _tag: "Written", template })
          const found = yield* templates.findById(org.id, uuid)
          expect(found).toEqual(Option.some(template))
          expect(JSON.stringify(Option.getOrThrow(found).components)).toBe(JSON.stringify(richComponents))
          expect(yield* templates.findById(org.id, fixtures.uuid() as TemplateId)).toEqual(Option.none())
        })
      ))

    it.effect("create → NameTaken for the same name (case-insensitively after trimming) and language; another language is another template", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const first = yield* createTemplate(org.id)
          for (const name of ["order_update", "ORDER_UPDATE", " order_update "]) {
            const outcome = yield* templates.create(org.id, { uuid: fixtures.uuid() as TemplateId, content: content({ name }), now: instant(1) })
            expect(outcome).toEqual({ _tag: "NameTaken" })
          }
          const spanish = yield* createTemplate(org.id, { language: "es" }, instant(2))
          const lowerRegion = yield* createTemplate(org.id, { language: "en_us" }, instant(3))
          expect((yield* templates.list(org.id, { page: 1, per_page: 10 })).items).toEqual([lowerRegion, spanish, first])
        })
      ))

    it.effect("deleteUnsubmitted removes only a template with no Meta id, of this organization; its identity is free again", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const local = yield* createTemplate(org.id, { waba_id: "111", status: "PENDING" }, instant(1))
          const fromMeta = yield* createTemplate(org.id, { waba_id: "111", name: "welcome", provider_template_id: "9001" }, instant(2))
          expect(yield* templates.deleteUnsubmitted(other.id, local.uuid)).toBe(false)
          expect(yield* templates.deleteUnsubmitted(org.id, fromMeta.uuid)).toBe(false)
          expect(yield* templates.findById(org.id, fromMeta.uuid)).toEqual(Option.some(fromMeta))
          expect(yield* templates.deleteUnsubmitted(org.id, local.uuid)).toBe(true)
          expect(yield* templates.findById(org.id, local.uuid)).toEqual(Option.none())
          expect(yield* templates.deleteUnsubmitted(org.id, local.uuid)).toBe(false)
          expect((yield* templates.list(org.id, { page: 1, per_page: 10 })).items).toEqual([fromMeta])
          yield* createTemplate(org.id, { waba_id: "111", status: "PENDING" }, instant(3))
        })
      ))

    it.effect("findByIdentity matches the name by nameKey and the language exactly", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const template = yield* createTemplate(org.id)
          for (const name of ["order_update", "Order_Update", "  order_update "]) {
            expect(yield* templates.findByIdentity(org.id, name, "en_US")).toEqual(Option.some(template))
          }
          expect(yield* templates.findByIdentity(org.id, "order_update", "en")).toEqual(Option.none())
          expect(yield* templates.findByIdentity(org.id, "order_update", "en_us")).toEqual(Option.none())
          expect(yield* templates.findByIdentity(org.id, "order", "en_US")).toEqual(Option.none())
        })
      ))

    it.effect("the identity is (waba_id, name, language): each account and no account are groups of their own", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const none = yield* createTemplate(org.id, {}, instant(1))
          const first = yield* createTemplate(org.id, { waba_id: "111", provider_template_id: "9001" }, instant(2))
          const second = yield* createTemplate(org.id, { waba_id: "222", provider_template_id: "9002" }, instant(3))
          for (const waba_id of [null, "111", "222"]) {
            const taken = content({ waba_id, name: " Order_Update " })
            expect(yield* templates.create(org.id, { uuid: fixtures.uuid() as TemplateId, content: taken, now: instant(4) })).toEqual({ _tag: "NameTaken" })
          }
          expect((yield* templates.list(org.id, { page: 1, per_page: 10 })).items).toEqual([second, first, none])
          // An update may not take another template's identity in its group; across groups it may.
          const welcome = yield* createTemplate(org.id, { waba_id: "111", name: "welcome" }, instant(5))
          expect(yield* templates.update(org.id, welcome.uuid, content({ waba_id: "111" }), instant(6))).toEqual({ _tag: "NameTaken" })
          expect(yield* templates.update(org.id, none.uuid, content({ waba_id: "111" }), instant(6))).toEqual({ _tag: "NameTaken" })
          const moved = yield* templates.update(org.id, welcome.uuid, content({ waba_id: "333", provider_template_id: "9003" }), instant(7))
          expect(moved._tag === "Written" && [moved.template.waba_id, moved.template.name]).toEqual(["333", "order_update"])
        })
      ))

    it.effect("findByIdentity with an account answers that account's template, else the one with no account; never another account's", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const ofAccount = yield* createTemplate(org.id, { waba_id: "111", provider_template_id: "9001" }, instant(1))
          expect(yield* templates.findByIdentity(org.id, "order_update", "en_US", "111")).toEqual(Option.some(ofAccount))
          expect(yield* templates.findByIdentity(org.id, "order_update", "en_US", "222")).toEqual(Option.none())
          expect(yield* templates.findByIdentity(org.id, "order_update", "en_US", null)).toEqual(Option.none())
          expect(yield* templates.findByIdentity(org.id, "order_update", "en_US")).toEqual(Option.none())
          const none = yield* createTemplate(org.id, {}, instant(2))
          expect(yield* templates.findByIdentity(org.id, "Order_Update", "en_US", "111")).toEqual(Option.some(ofAccount))
          expect(yield* templates.findByIdentity(org.id, "order_update", "en_US", "222")).toEqual(Option.some(none))
          expect(yield* templates.findByIdentity(org.id, "order_update", "en_US", null)).toEqual(Option.some(none))
          expect(yield* templates.findByIdentity(org.id, "order_update", "en_US")).toEqual(Option.some(none))
          expect(yield* templates.findByIdentity(org.id, "order_update", "en", "111")).toEqual(Option.none())
        })
      ))

    it.effect("a template from Meta round-trips: waba_id, provider_template_id, rejected_reason, problems and raw components as given", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const uuid = fixtures.uuid() as TemplateId
          const raw = [
            { type: "HEADER", format: "LOCATION" },
            { type: "BODY", text: "Hi {{1}}", example: { body_text: [["Ada"]] }, "$weird": { "a.b": 1 } },
            { type: "CAROUSEL", cards: [{ components: [{ type: "BODY", text: "Card {{1}}" }] }], extra: null }
          ]
          const problems = [
            { path: "components[0].format", message: "components[0].format must be one of TEXT, IMAGE, VIDEO, DOCUMENT" },
            { path: "components[2].type", message: "components[2].type must be one of HEADER, BODY, FOOTER, BUTTONS" }
          ]
          const written = content({ waba_id: "111", provider_template_id: "1407680676729941", status: "REJECTED", components: raw, problems })
          const outcome = yield* templates.create(org.id, { uuid, content: { ...written, rejected_reason: "INVALID_FORMAT" }, now: instant(1) })
          const template: Template = { uuid, ...written, rejected_reason: "INVALID_FORMAT", created_at: instant(1), updated_at: instant(1) }
          expect(outcome).toEqual({ _tag: "Written", template })
          const found = yield* templates.findById(org.id, uuid)
          expect(found).toEqual(Option.some(template))
          expect(JSON.stringify(Option.getOrThrow(found).components)).toBe(JSON.stringify(raw))
          expect(yield* templates.findByProviderId(org.id, "1407680676729941")).toEqual(Option.some(template))
          expect(yield* templates.findByProviderId(other.id, "1407680676729941")).toEqual(Option.none())
          expect(yield* templates.findByProviderId(org.id, "1")).toEqual(Option.none())
          // An update given rejected_reason writes it, whatever the status; given none, the rule applies.
          const approved = yield* templates.update(org.id, uuid, { ...content({ waba_id: "111", provider_template_id: "1407680676729941" }), rejected_reason: null }, instant(2))
          expect(approved._tag === "Written" && [approved.template.status, approved.template.rejected_reason, approved.template.problems]).toEqual(["APPROVED", null, []])
          const paused = yield* templates.update(org.id, uuid, { ...content({ waba_id: "111", status: "PAUSED" }), rejected_reason: "LOW_QUALITY" }, instant(3))
          expect(paused._tag === "Written" && [paused.template.provider_template_id, paused.template.rejected_reason]).toEqual([null, "LOW_QUALITY"])
          expect(Option.map(yield* templates.findById(org.id, uuid), (t) => [t.status, t.rejected_reason, t.provider_template_id])).toEqual(
            Option.some(["PAUSED", "LOW_QUALITY", null])
          )
          expect(yield* templates.findByProviderId(org.id, "1407680676729941")).toEqual(Option.none())
        })
      ))

    it.effect("update replaces the content, keeps created_at and sets updated_at", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const template = yield* createTemplate(org.id, {}, instant(1))
          const changed = content({ name: "order_shipped", status: "REJECTED", components: richComponents })
          const expected: Template = { uuid: template.uuid, ...changed, rejected_reason: null, created_at: instant(1), updated_at: instant(5) }
          expect(yield* templates.update(org.id, template.uuid, changed, instant(5))).toEqual({ _tag: "Written", template: expected })
          expect(yield* templates.findById(org.id, template.uuid)).toEqual(Option.some(expected))
          expect(yield* templates.findByIdentity(org.id, "order_update", "en_US")).toEqual(Option.none())
          const own = content({ name: "ORDER_SHIPPED", status: "APPROVED" })
          expect((yield* templates.update(org.id, template.uuid, own, instant(6)))._tag).toBe("Written")
        })
      ))

    it.effect("updateStatus sets status and rejected_reason, and updated_at only when either changes", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const template = yield* createTemplate(org.id, {}, instant(1))
          const steps: ReadonlyArray<readonly [TemplateStatus, string | null, boolean]> = [
            ["REJECTED", "INVALID_FORMAT", true],
            ["REJECTED", "INVALID_FORMAT", false],
            ["REJECTED", "TAG_CONTENT_MISMATCH", true],
            ["PAUSED", "TAG_CONTENT_MISMATCH", true],
            ["PAUSED", null, true],
            ["PAUSED", null, false],
            ["APPROVED", null, true]
          ]
          let expected = template
          for (const [n, [status, rejected_reason, changed]] of steps.entries()) {
            const now = instant(2 + n)
            if (changed) expected = { ...expected, status, rejected_reason, updated_at: now }
            expect(yield* templates.updateStatus(org.id, template.uuid, { status, rejected_reason, now })).toEqual({ _tag: "Updated", template: expected, changed })
            expect(yield* templates.findById(org.id, template.uuid)).toEqual(Option.some(expected))
          }
        })
      ))

    it.effect("a guarded update or updateStatus writes only while updated_at is not later than unchangedSince; else Stale, nothing written", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const template = yield* createTemplate(org.id, { waba_id: "111", provider_template_id: "9001" }, instant(5))
          // Changed after the guard's instant: refused, whatever the write.
          const changed = content({ waba_id: "111", provider_template_id: "9001", category: "MARKETING" })
          expect(yield* templates.update(org.id, template.uuid, changed, instant(7), { unchangedSince: instant(4) })).toEqual({ _tag: "Stale", template })
          expect(yield* templates.updateStatus(org.id, template.uuid, { status: "PAUSED", rejected_reason: null, now: instant(7), unchangedSince: instant(4) }))
            .toEqual({ _tag: "Stale", template })
          expect(yield* templates.findById(org.id, template.uuid)).toEqual(Option.some(template))
          // Not later (equal counts as unchanged): written.
          const written = yield* templates.update(org.id, template.uuid, changed, instant(7), { unchangedSince: instant(5) })
          expect(written).toMatchObject({ _tag: "Written", template: { category: "MARKETING", updated_at: instant(7) } })
          const paused = yield* templates.updateStatus(org.id, template.uuid, { status: "PAUSED", rejected_reason: null, now: instant(8), unchangedSince: instant(7) })
          expect(paused).toMatchObject({ _tag: "Updated", changed: true, template: { status: "PAUSED", updated_at: instant(8) } })
          // A guard on an unknown template: NotFound.
          expect(yield* templates.update(org.id, fixtures.uuid() as TemplateId, changed, instant(9), { unchangedSince: instant(9) })).toEqual({ _tag: "NotFound" })
          expect(yield* templates.updateStatus(org.id, fixtures.uuid() as TemplateId, { status: "PAUSED", rejected_reason: null, now: instant(9), unchangedSince: instant(9) }))
            .toEqual({ _tag: "NotFound" })
        })
      ))

    it.effect("updateStatus → NotFound for another organization's template or an unknown uuid; nothing written", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const mine = yield* createTemplate(org.id, {}, instant(1))
          const update = { status: "REJECTED", rejected_reason: "INVALID_FORMAT", now: instant(2) } as const
          expect(yield* templates.updateStatus(other.id, mine.uuid, update)).toEqual({ _tag: "NotFound" })
          expect(yield* templates.updateStatus(org.id, fixtures.uuid() as TemplateId, update)).toEqual({ _tag: "NotFound" })
          expect(yield* templates.findById(org.id, mine.uuid)).toEqual(Option.some(mine))
        })
      ))

    it.effect("update keeps rejected_reason while the status stays REJECTED, and clears it otherwise", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const template = yield* createTemplate(org.id, { status: "REJECTED" }, instant(1))
          expect(template.rejected_reason).toBeNull()
          yield* templates.updateStatus(org.id, template.uuid, { status: "REJECTED", rejected_reason: "INVALID_FORMAT", now: instant(2) })
          const kept = yield* templates.update(org.id, template.uuid, content({ status: "REJECTED", name: "order_fixed" }), instant(3))
          expect(kept._tag === "Written" && [kept.template.name, kept.template.rejected_reason]).toEqual(["order_fixed", "INVALID_FORMAT"])
          expect(Option.map(yield* templates.findById(org.id, template.uuid), (t) => t.rejected_reason)).toEqual(Option.some("INVALID_FORMAT"))
          const cleared = yield* templates.update(org.id, template.uuid, content({ status: "PENDING" }), instant(4))
          expect(cleared._tag === "Written" && [cleared.template.status, cleared.template.rejected_reason]).toEqual(["PENDING", null])
          expect(Option.map(yield* templates.findById(org.id, template.uuid), (t) => t.rejected_reason)).toEqual(Option.some(null))
        })
      ))

    it.effect("a template with each of Meta's statuses round-trips", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          expect(TemplateStatus.literals).toHaveLength(11)
          for (const [n, status] of TemplateStatus.literals.entries()) {
            const created = yield* createTemplate(org.id, { name: `status_${n}`, status }, instant(n))
            expect(created).toMatchObject({ status, rejected_reason: null })
            expect(yield* templates.findById(org.id, created.uuid)).toEqual(Option.some(created))
            const other = TemplateStatus.literals[(n + 1) % TemplateStatus.literals.length]!
            const updated = yield* templates.update(org.id, created.uuid, content({ name: `status_${n}`, status: other }), instant(n))
            expect(updated._tag === "Written" && updated.template.status).toBe(other)
            yield* templates.updateStatus(org.id, created.uuid, { status, rejected_reason: null, now: instant(n) })
            expect(Option.map(yield* templates.findById(org.id, created.uuid), (t) => t.status)).toEqual(Option.some(status))
          }
          expect((yield* templates.list(org.id, { page: 1, per_page: 20 })).total).toBe(11)
        })
      ))

    it.effect("update → NotFound for an unknown uuid, NameTaken for another template's identity; nothing written", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const first = yield* createTemplate(org.id, {}, instant(1))
          const second = yield* createTemplate(org.id, { name: "welcome" }, instant(2))
          const unknown = fixtures.uuid() as TemplateId
          expect(yield* templates.update(org.id, unknown, content({ name: "other" }), instant(3))).toEqual({ _tag: "NotFound" })
          expect(yield* templates.update(org.id, second.uuid, content({ name: "Order_Update" }), instant(3))).toEqual({ _tag: "NameTaken" })
          expect(yield* templates.findById(org.id, second.uuid)).toEqual(Option.some(second))
          expect(yield* templates.list(org.id, { page: 1, per_page: 10 })).toEqual({ items: [second, first], total: 2 })
        })
      ))

    it.effect("lists newest first (created_at desc, uuid desc); a page past the end is empty", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          expect(yield* templates.list(org.id, { page: 1, per_page: 20 })).toEqual({ items: [], total: 0 })
          const a = yield* createTemplate(org.id, { name: "a" }, instant(1))
          const c = yield* createTemplate(org.id, { name: "c" }, instant(3))
          const b = yield* createTemplate(org.id, { name: "b" }, instant(2))
          const tied = [yield* createTemplate(org.id, { name: "d" }, instant(4)), yield* createTemplate(org.id, { name: "e" }, instant(4))]
          const [d, e] = [...tied].sort((x, y) => (x.uuid < y.uuid ? 1 : -1))
          const expected = [d, e, c, b, a]
          expect(yield* templates.list(org.id, { page: 1, per_page: 20 })).toEqual({ items: expected, total: 5 })
          expect(yield* templates.list(org.id, { page: 2, per_page: 2 })).toEqual({ items: expected.slice(2, 4), total: 5 })
          expect(yield* templates.list(org.id, { page: 9, per_page: 2 })).toEqual({ items: [], total: 5 })
        })
      ))

    it.effect("tenant isolation: another organization cannot find, list or update a template, and may use the same identity", () =>
      run(
        Effect.gen(function* () {
          const { templates } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const mine = yield* createTemplate(org.id)
          expect(yield* templates.findById(other.id, mine.uuid)).toEqual(Option.none())
          expect(yield* templates.findByIdentity(other.id, "order_update", "en_US")).toEqual(Option.none())
          expect(yield* templates.list(other.id, { page: 1, per_page: 10 })).toEqual({ items: [], total: 0 })
          expect(yield* templates.update(other.id, mine.uuid, content({ status: "REJECTED" }), instant(1))).toEqual({ _tag: "NotFound" })
          const theirs = yield* createTemplate(other.id)
          expect(yield* templates.findByIdentity(other.id, "order_update", "en_US")).toEqual(Option.some(theirs))
          expect(yield* templates.findById(org.id, mine.uuid)).toEqual(Option.some(mine))
          expect(yield* templates.list(org.id, { page: 1, per_page: 10 })).toEqual({ items: [mine], total: 1 })
        })
      ))
  })
}
