import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type ContactId, Storage } from "@switchboard/core"
import type { StorageContractOptions } from "./options.js"
import { append, inboundRequest } from "./chat-support.js"
import * as fixtures from "./fixtures.js"
import {
  assignLabel,
  contactOf,
  createGroup,
  createLabel,
  groupCount,
  importContact,
  importContacts,
  insertOrganization,
  labelCount,
  runner
} from "./support.js"

const { groupWithId, importRow, instant, phone } = fixtures

/**
 * Contract of `Storage.contacts` besides `importBulk`: list, findById, update, delete,
 * labelsOf, and tenant isolation (docs/contacts.md "Records"; docs/http-api.md "Pagination").
 */
export const contactsContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("contacts", () => {
    it.effect("lists newest first (created_at desc, uuid desc) with the total; a page past the end is empty", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          expect(yield* contacts.list(org.id, { page: 1, per_page: 20 })).toEqual({ items: [], total: 0 })
          const a = yield* importContact(org.id, phone(1), instant(1))
          const c = yield* importContact(org.id, phone(3), instant(3))
          const b = yield* importContact(org.id, phone(2), instant(2))
          const tied = yield* importContacts(org.id, [importRow(phone(4)), importRow(phone(5))], { now: instant(4) })
          const [d, e] = tied.contacts.map((x) => x.uuid).sort().reverse()
          const expected = [d, e, c, b, a]
          const uuids = (page: number, per_page: number) =>
            contacts.list(org.id, { page, per_page }).pipe(
              Effect.map(({ items, total }) => ({ uuids: items.map((x) => x.uuid), total }))
            )
          expect(yield* uuids(1, 20)).toEqual({ uuids: expected, total: 5 })
          expect(yield* uuids(1, 2)).toEqual({ uuids: expected.slice(0, 2), total: 5 })
          expect(yield* uuids(2, 2)).toEqual({ uuids: expected.slice(2, 4), total: 5 })
          expect(yield* uuids(3, 2)).toEqual({ uuids: expected.slice(4), total: 5 })
          expect(yield* uuids(4, 2)).toEqual({ uuids: [], total: 5 })
          const page = yield* contacts.list(org.id, { page: 3, per_page: 2 })
          expect(page.items).toEqual([yield* contactOf(org.id, a)])
        })
      ))

    it.effect("embeds groups {uuid, name} and labels {uuid, name, color}, each sorted by name", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          const beta = yield* createGroup(org.id, "beta")
          const alpha = yield* createGroup(org.id, "alpha")
          const zeta = yield* createLabel(org.id, "zeta", "#112233")
          const eta = yield* createLabel(org.id, "eta", "#abc")
          const result = yield* importContacts(org.id, [
            importRow(phone(1), { first_name: "A" }, [groupWithId(beta.uuid), groupWithId(alpha.uuid)]),
            importRow(phone(2), { first_name: "B" })
          ])
          const [one, two] = result.contacts.map((x) => x.uuid) as [ContactId, ContactId]
          yield* assignLabel(org.id, zeta, [one])
          yield* assignLabel(org.id, eta, [one])
          const contact = yield* contactOf(org.id, one)
          expect(contact.groups).toEqual([
            { uuid: alpha.uuid, name: "alpha" },
            { uuid: beta.uuid, name: "beta" }
          ])
          expect(contact.labels).toEqual([
            { uuid: eta.uuid, name: "eta", color: "#abc" },
            { uuid: zeta.uuid, name: "zeta", color: "#112233" }
          ])
          const page = yield* contacts.list(org.id, { page: 1, per_page: 10 })
          expect(page.items).toEqual([yield* contactOf(org.id, two), contact].sort((x, y) => (x.uuid < y.uuid ? 1 : -1)))
          expect((yield* contactOf(org.id, two)).groups).toEqual([])
        })
      ))

    it.effect("findById finds nothing for an unknown uuid", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          yield* importContact(org.id, phone(1))
          expect(yield* contacts.findById(org.id, fixtures.uuid() as ContactId)).toEqual(Option.none())
        })
      ))

    it.effect("update sets the given fields, the phone and updated_at, and keeps the rest", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          const group = yield* createGroup(org.id, "team")
          const [id] = (yield* importContacts(
            org.id,
            [importRow(phone(1), { first_name: "Ada", last_name: "L", city: "London" }, [groupWithId(group.uuid)])],
            { now: instant(1) }
          )).contacts.map((x) => x.uuid)
          const outcome = yield* contacts.update(
            org.id,
            id!,
            { phone: phone(9), details: { first_name: "Augusta", email: "a@example.com" } },
            instant(7)
          )
          const expected = {
            uuid: id,
            phone: phone(9),
            phone_valid: true,
            marketing_opt_out_at: null,
            ...fixtures.details({ first_name: "Augusta", last_name: "L", email: "a@example.com", city: "London" }),
            groups: [{ uuid: group.uuid, name: "team" }],
            labels: [],
            created_at: instant(1),
            updated_at: instant(7)
          }
          expect(outcome).toEqual({ _tag: "Updated", contact: expected })
          expect(yield* contactOf(org.id, id!)).toEqual(expected)
          const reimported = yield* importContacts(org.id, [importRow(phone(9))])
          expect(reimported.contacts[0]).toEqual({ uuid: id, phone: phone(9), status: "updated" })
        })
      ))

    it.effect("update with null clears last_name and email; its own phone is not taken", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          const id = yield* importContact(org.id, phone(1), instant(1), {
            first_name: "Ada",
            last_name: "L",
            email: "a@example.com"
          })
          const outcome = yield* contacts.update(
            org.id,
            id,
            { phone: phone(1), details: { last_name: null, email: null } },
            instant(2)
          )
          expect(outcome._tag).toBe("Updated")
          const contact = yield* contactOf(org.id, id)
          expect([contact.first_name, contact.last_name, contact.email, contact.phone]).toEqual([
            "Ada",
            null,
            null,
            phone(1)
          ])
        })
      ))

    it.effect("update to another contact's phone → PhoneTaken, nothing written; unknown uuid → NotFound", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          const a = yield* importContact(org.id, phone(1), instant(1))
          yield* importContact(org.id, phone(2), instant(1))
          const before = yield* contactOf(org.id, a)
          const taken = yield* contacts.update(
            org.id,
            a,
            { phone: phone(2), details: { first_name: "Changed" } },
            instant(5)
          )
          expect(taken).toEqual({ _tag: "PhoneTaken" })
          expect(yield* contactOf(org.id, a)).toEqual(before)
          const missing = yield* contacts.update(
            org.id,
            fixtures.uuid() as ContactId,
            { details: { first_name: "X" } },
            instant(5)
          )
          expect(missing).toEqual({ _tag: "NotFound" })
          expect((yield* contacts.list(org.id, { page: 1, per_page: 10 })).total).toBe(2)
        })
      ))

    it.effect("delete removes the contact with its memberships and labels, and is false the second time", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          const group = yield* createGroup(org.id, "team")
          const label = yield* createLabel(org.id, "hot")
          const result = yield* importContacts(org.id, [
            importRow(phone(1), {}, [groupWithId(group.uuid)]),
            importRow(phone(2), {}, [groupWithId(group.uuid)])
          ])
          const [gone, kept] = result.contacts.map((x) => x.uuid) as [ContactId, ContactId]
          yield* assignLabel(org.id, label, [gone, kept])
          expect([yield* groupCount(org.id, group), yield* labelCount(org.id, label)]).toEqual([
            Option.some(2),
            Option.some(2)
          ])
          expect(yield* contacts.delete(org.id, gone)).toBe(true)
          expect(yield* contacts.findById(org.id, gone)).toEqual(Option.none())
          expect(yield* contacts.labelsOf(org.id, gone)).toEqual(Option.none())
          expect([yield* groupCount(org.id, group), yield* labelCount(org.id, label)]).toEqual([
            Option.some(1),
            Option.some(1)
          ])
          expect(yield* contacts.delete(org.id, gone)).toBe(false)
          expect((yield* contactOf(org.id, kept)).labels).toHaveLength(1)
          const again = yield* importContacts(org.id, [importRow(phone(1))])
          expect(again.contacts[0]?.status).toBe("created")
          expect((yield* contactOf(org.id, again.contacts[0]!.uuid)).groups).toEqual([])
        })
      ))

    it.effect("labelsOf lists the contact's labels by name with contacts_count; None for no such contact", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          const a = yield* importContact(org.id, phone(1))
          const b = yield* importContact(org.id, phone(2))
          const red = yield* createLabel(org.id, "red", "#f00", instant(1))
          const blue = yield* createLabel(org.id, "blue", "#00f", instant(2))
          yield* createLabel(org.id, "unused")
          expect(yield* contacts.labelsOf(org.id, a)).toEqual(Option.some([]))
          yield* assignLabel(org.id, red, [a, b])
          yield* assignLabel(org.id, blue, [a])
          expect(yield* contacts.labelsOf(org.id, a)).toEqual(
            Option.some([
              { ...blue, contacts_count: 1 },
              { ...red, contacts_count: 2 }
            ])
          )
          expect(yield* contacts.labelsOf(org.id, fixtures.uuid() as ContactId)).toEqual(Option.none())
        })
      ))

    it.effect("tenant isolation: another organization cannot see, update, delete or list a contact", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const label = yield* createLabel(org.id, "hot")
          const mine = yield* importContact(org.id, phone(1), instant(1), { first_name: "Mine" })
          yield* assignLabel(org.id, label, [mine])
          const before = yield* contactOf(org.id, mine)
          expect(yield* contacts.findById(other.id, mine)).toEqual(Option.none())
          expect(yield* contacts.list(other.id, { page: 1, per_page: 10 })).toEqual({ items: [], total: 0 })
          expect(yield* contacts.update(other.id, mine, { details: { first_name: "Hacked" } }, instant(2))).toEqual({
            _tag: "NotFound"
          })
          expect(yield* contacts.delete(other.id, mine)).toBe(false)
          expect(yield* contacts.labelsOf(other.id, mine)).toEqual(Option.none())
          const theirs = yield* importContact(other.id, phone(2))
          const moved = yield* contacts.update(other.id, theirs, { phone: phone(1), details: {} }, instant(3))
          expect(moved._tag).toBe("Updated")
          expect(yield* contactOf(org.id, mine)).toEqual(before)
          expect((yield* contacts.list(org.id, { page: 1, per_page: 10 })).items).toEqual([before])
        })
      ))

    it.effect("phone_valid: true when imported; false as created by an inbound message; true again once update sets a phone", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          const imported = yield* importContact(org.id, phone(1))
          expect((yield* contactOf(org.id, imported)).phone_valid).toBe(true)
          const unverified = "+999123"
          const { chat } = yield* append(org.id, inboundRequest(unverified, { phoneValid: false }))
          const created = yield* contactOf(org.id, chat.contact.uuid)
          expect([created.phone, created.phone_valid]).toEqual([unverified, false])
          // A send answering it upserts by that exact phone: the contact keeps its flag.
          const again = yield* importContacts(org.id, [{ ...fixtures.importRow(unverified, { last_name: "Byron" }), phone_valid: false }])
          expect(again.contacts).toEqual([{ uuid: created.uuid, phone: unverified, status: "updated" }])
          expect(yield* contactOf(org.id, created.uuid)).toMatchObject({ phone_valid: false, last_name: "Byron" })
          const renamed = yield* contacts.update(org.id, created.uuid, { details: { first_name: "Ada" } }, instant(2))
          expect(renamed._tag === "Updated" && renamed.contact.phone_valid).toBe(false)
          const fixed = yield* contacts.update(org.id, created.uuid, { phone: phone(2), details: {} }, instant(3))
          expect(fixed._tag === "Updated" && [fixed.contact.phone, fixed.contact.phone_valid]).toEqual([phone(2), true])
          const fresh = yield* importContacts(org.id, [{ ...fixtures.importRow("+999124"), phone_valid: false }])
          expect((yield* contactOf(org.id, fresh.contacts[0]!.uuid)).phone_valid).toBe(false)
        })
      ))

    it.effect("findByPhone: the contact whose stored phone is exactly that, of this organization only", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const { chat } = yield* append(org.id, inboundRequest("+999123", { phoneValid: false }))
          const found = yield* contacts.findByPhone(org.id, "+999123")
          expect(found).toEqual(Option.some(yield* contactOf(org.id, chat.contact.uuid)))
          expect(yield* contacts.findByPhone(org.id, "999123")).toEqual(Option.none())
          expect(yield* contacts.findByPhone(other.id, "+999123")).toEqual(Option.none())
        })
      ))
  })
}
