import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type ContactId, type LabelId, Storage } from "@switchboard/core"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import {
  assignLabel,
  contactOf,
  createLabel,
  importContact,
  insertOrganization,
  labelCount,
  runner,
  sorted
} from "./support.js"

const { instant, phone } = fixtures

/** A label create request with a fresh uuid. */
const labelInput = (name: string, color = "#808080", now = instant(0)) => ({
  uuid: fixtures.uuid() as LabelId,
  name,
  color,
  now
})

/**
 * Contract of `Storage.labels`: the atomic `label_limit` check, case-insensitive names,
 * deleteMany, idempotent all-or-nothing assign, tenant isolation
 * (docs/contacts.md "Rules", "Plan limits").
 */
export const labelsContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("labels", () => {
    it.effect("creates a label with contacts_count 0 and finds it by uuid", () =>
      run(
        Effect.gen(function* () {
          const { labels } = yield* Storage
          const org = yield* insertOrganization()
          const input = labelInput("Hot lead", "#ff0000", instant(1))
          const label = {
            uuid: input.uuid,
            name: "Hot lead",
            color: "#ff0000",
            contacts_count: 0,
            created_at: instant(1),
            updated_at: instant(1)
          }
          expect(yield* labels.create(org.id, input, 5)).toEqual({ _tag: "Created", label })
          expect(yield* labels.findById(org.id, input.uuid)).toEqual(Option.some(label))
          expect(yield* labels.findById(org.id, fixtures.uuid() as LabelId)).toEqual(Option.none())
        })
      ))

    it.effect("create → NameTaken when the name is used, compared case-insensitively after trimming", () =>
      run(
        Effect.gen(function* () {
          const { labels } = yield* Storage
          const org = yield* insertOrganization()
          const hot = yield* createLabel(org.id, "Hot")
          for (const name of ["Hot", "HOT", " hot "]) {
            expect(yield* labels.create(org.id, labelInput(name), null)).toEqual({ _tag: "NameTaken" })
          }
          expect(yield* labels.list(org.id, { page: 1, per_page: 10 })).toEqual({ items: [hot], total: 1 })
        })
      ))

    it.effect("create → LimitExceeded {limit, usage} once the organization has labelLimit labels", () =>
      run(
        Effect.gen(function* () {
          const { labels } = yield* Storage
          const org = yield* insertOrganization()
          expect(yield* labels.create(org.id, labelInput("none"), 0)).toEqual({
            _tag: "LimitExceeded",
            limit: 0,
            usage: 0
          })
          expect((yield* labels.create(org.id, labelInput("one"), 2))._tag).toBe("Created")
          const second = yield* labels.create(org.id, labelInput("two"), 2)
          expect(second._tag).toBe("Created")
          expect(yield* labels.create(org.id, labelInput("three"), 2)).toEqual({
            _tag: "LimitExceeded",
            limit: 2,
            usage: 2
          })
          expect(yield* labels.create(org.id, labelInput("three"), 1)).toEqual({
            _tag: "LimitExceeded",
            limit: 1,
            usage: 2
          })
          expect((yield* labels.list(org.id, { page: 1, per_page: 10 })).total).toBe(2)
          if (second._tag === "Created") expect(yield* labels.deleteMany(org.id, [second.label.uuid])).toHaveLength(1)
          expect((yield* labels.create(org.id, labelInput("three"), 2))._tag).toBe("Created")
        })
      ))

    it.effect("a null labelLimit is unlimited", () =>
      run(
        Effect.gen(function* () {
          const { labels } = yield* Storage
          const org = yield* insertOrganization()
          for (let i = 0; i < 25; i++) {
            expect((yield* labels.create(org.id, labelInput(`label ${i}`), null))._tag).toBe("Created")
          }
          expect((yield* labels.list(org.id, { page: 1, per_page: 1 })).total).toBe(25)
        })
      ))

    it.effect("findByNames finds this organization's labels by name, case-insensitively after trimming", () =>
      run(
        Effect.gen(function* () {
          const { labels } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const hot = yield* createLabel(org.id, "Hot")
          const cold = yield* createLabel(org.id, "cold")
          yield* createLabel(org.id, "warm")
          yield* createLabel(other.id, "Unknown")
          yield* assignLabel(org.id, cold, [yield* importContact(org.id, phone(1))])
          const found = yield* labels.findByNames(org.id, [" HOT ", "Cold", "unknown", "cold"])
          expect(sorted(found.map((l) => l.uuid))).toEqual(sorted([hot.uuid, cold.uuid]))
          expect(found.find((l) => l.uuid === cold.uuid)).toEqual({ ...cold, contacts_count: 1 })
          expect(found.find((l) => l.uuid === hot.uuid)).toEqual(hot)
          expect(yield* labels.findByNames(org.id, [])).toEqual([])
          expect(yield* labels.findByNames(other.id, ["hot", "cold"])).toEqual([])
        })
      ))

    it.effect("lists newest first (created_at desc, uuid desc) with contacts_count; a page past the end is empty", () =>
      run(
        Effect.gen(function* () {
          const { labels } = yield* Storage
          const org = yield* insertOrganization()
          expect(yield* labels.list(org.id, { page: 1, per_page: 20 })).toEqual({ items: [], total: 0 })
          const a = yield* createLabel(org.id, "a", "#000", instant(1))
          const c = yield* createLabel(org.id, "c", "#000", instant(3))
          const b = yield* createLabel(org.id, "b", "#000", instant(2))
          const tied = [yield* createLabel(org.id, "d", "#000", instant(4)), yield* createLabel(org.id, "e", "#000", instant(4))]
          const contact = yield* importContact(org.id, phone(1))
          yield* assignLabel(org.id, b, [contact])
          const [d, e] = [...tied].sort((x, y) => (x.uuid < y.uuid ? 1 : -1))
          const expected = [d, e, c, { ...b, contacts_count: 1 }, a]
          expect(yield* labels.list(org.id, { page: 1, per_page: 20 })).toEqual({ items: expected, total: 5 })
          expect(yield* labels.list(org.id, { page: 2, per_page: 2 })).toEqual({ items: expected.slice(2, 4), total: 5 })
          expect(yield* labels.list(org.id, { page: 3, per_page: 2 })).toEqual({ items: [a], total: 5 })
          expect(yield* labels.list(org.id, { page: 9, per_page: 2 })).toEqual({ items: [], total: 5 })
        })
      ))

    it.effect("deleteMany deletes the labels that exist, returns only those, and removes their assignments", () =>
      run(
        Effect.gen(function* () {
          const { contacts, labels } = yield* Storage
          const org = yield* insertOrganization()
          const hot = yield* createLabel(org.id, "hot")
          const cold = yield* createLabel(org.id, "cold")
          const kept = yield* createLabel(org.id, "kept")
          const contact = yield* importContact(org.id, phone(1))
          yield* assignLabel(org.id, hot, [contact])
          yield* assignLabel(org.id, kept, [contact])
          const unknown = fixtures.uuid() as LabelId
          const deleted = yield* labels.deleteMany(org.id, [hot.uuid, unknown, cold.uuid])
          expect(sorted(deleted)).toEqual(sorted([hot.uuid, cold.uuid]))
          expect(yield* labels.findById(org.id, hot.uuid)).toEqual(Option.none())
          expect(yield* contacts.labelsOf(org.id, contact)).toEqual(Option.some([{ ...kept, contacts_count: 1 }]))
          expect((yield* contactOf(org.id, contact)).labels).toEqual([{ uuid: kept.uuid, name: "kept", color: kept.color }])
          expect(yield* labels.deleteMany(org.id, [hot.uuid, cold.uuid])).toEqual([])
          expect(yield* labels.list(org.id, { page: 1, per_page: 10 })).toEqual({
            items: [{ ...kept, contacts_count: 1 }],
            total: 1
          })
          yield* createLabel(org.id, "HOT")
        })
      ))

    it.effect("assign puts the label on every contact, idempotently", () =>
      run(
        Effect.gen(function* () {
          const { contacts, labels } = yield* Storage
          const org = yield* insertOrganization()
          const label = yield* createLabel(org.id, "vip", "#123456")
          const a = yield* importContact(org.id, phone(1))
          const b = yield* importContact(org.id, phone(2))
          const c = yield* importContact(org.id, phone(3))
          yield* assignLabel(org.id, label, [a, b])
          expect(yield* labelCount(org.id, label)).toEqual(Option.some(2))
          expect(yield* labels.assign(org.id, label.uuid, [b, c, b, a], instant(1))).toEqual({ _tag: "Assigned" })
          expect(yield* labelCount(org.id, label)).toEqual(Option.some(3))
          for (const id of [a, b, c]) {
            expect(yield* contacts.labelsOf(org.id, id)).toEqual(Option.some([{ ...label, contacts_count: 3 }]))
          }
        })
      ))

    it.effect("assign → NotFound naming the missing label and contacts, writing nothing", () =>
      run(
        Effect.gen(function* () {
          const { labels } = yield* Storage
          const org = yield* insertOrganization()
          const label = yield* createLabel(org.id, "vip")
          const a = yield* importContact(org.id, phone(1))
          const b = yield* importContact(org.id, phone(2))
          const missing = fixtures.uuid() as ContactId
          const unknownLabel = fixtures.uuid() as LabelId
          expect(yield* labels.assign(org.id, label.uuid, [a, missing, b], instant(1))).toEqual({
            _tag: "NotFound",
            label: false,
            contacts: [missing]
          })
          expect(yield* labels.assign(org.id, unknownLabel, [a, b], instant(1))).toEqual({
            _tag: "NotFound",
            label: true,
            contacts: []
          })
          expect(yield* labels.assign(org.id, unknownLabel, [missing], instant(1))).toEqual({
            _tag: "NotFound",
            label: true,
            contacts: [missing]
          })
          expect(yield* labelCount(org.id, label)).toEqual(Option.some(0))
          expect((yield* contactOf(org.id, a)).labels).toEqual([])
        })
      ))

    it.effect("tenant isolation: another organization cannot see, list, delete or assign a label", () =>
      run(
        Effect.gen(function* () {
          const { labels } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const mine = yield* createLabel(org.id, "VIP")
          const myContact = yield* importContact(org.id, phone(1))
          const theirContact = yield* importContact(other.id, phone(1))
          expect(yield* labels.findById(other.id, mine.uuid)).toEqual(Option.none())
          expect(yield* labels.list(other.id, { page: 1, per_page: 10 })).toEqual({ items: [], total: 0 })
          expect(yield* labels.deleteMany(other.id, [mine.uuid])).toEqual([])
          expect(yield* labels.assign(other.id, mine.uuid, [theirContact], instant(1))).toEqual({
            _tag: "NotFound",
            label: true,
            contacts: []
          })
          expect(yield* labels.assign(org.id, mine.uuid, [theirContact], instant(1))).toEqual({
            _tag: "NotFound",
            label: false,
            contacts: [theirContact]
          })
          const theirs = yield* labels.create(other.id, labelInput("vip"), 1)
          expect(theirs._tag).toBe("Created")
          if (theirs._tag === "Created") {
            expect(yield* labels.assign(other.id, theirs.label.uuid, [myContact], instant(1))).toEqual({
              _tag: "NotFound",
              label: false,
              contacts: [myContact]
            })
          }
          expect(yield* labels.findById(org.id, mine.uuid)).toEqual(Option.some(mine))
          expect((yield* labels.create(org.id, labelInput("second"), 2))._tag).toBe("Created")
        })
      ))
  })
}
