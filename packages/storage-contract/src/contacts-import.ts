import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ContactId, type GroupId, Storage } from "@switchboard/core"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import {
  contactOf,
  createGroup,
  importContact,
  importContacts,
  insertOrganization,
  runner,
  sorted
} from "./support.js"

const { groupNamed, groupWithId, importRow, instant, phone } = fixtures

/**
 * Contract of `Storage.contacts.importBulk`: upserts by phone, groups by name or uuid, the
 * `contacts_limit` check, all or nothing (docs/contacts.md "Rules", "Plan limits").
 */
export const contactsImportContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("contacts.importBulk", () => {
    it.effect("creates new contacts in row order, taking the request's ids in order", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          const rows = [
            importRow(phone(100), { first_name: "Ada", last_name: "Lovelace", email: "ada@example.com" }),
            importRow(phone(101), { first_name: "Alan", street: "1 Main St", city: "Leeds", state: "WY" }),
            importRow(phone(102), { first_name: "Grace", zip: "10001", country: "US" })
          ]
          const request = fixtures.importRequest(rows, { now: instant(5) })
          const outcome = yield* contacts.importBulk(org.id, request)
          const ids = request.ids.slice(0, 3)
          expect(outcome).toEqual({
            _tag: "Imported",
            result: {
              created: 3,
              updated: 0,
              contacts: rows.map((row, i) => ({ uuid: ids[i], phone: row.phone, status: "created" }))
            }
          })
          for (const [i, row] of rows.entries()) {
            expect(yield* contactOf(org.id, ids[i] as ContactId)).toEqual({
              uuid: ids[i],
              phone: row.phone,
              phone_valid: true,
              marketing_opt_out_at: null,
              ...fixtures.details(row.details),
              groups: [],
              labels: [],
              created_at: instant(5),
              updated_at: instant(5)
            })
          }
        })
      ))

    it.effect("updates contacts by phone: present details overwrite, absent ones are kept", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const ada = yield* importContact(org.id, phone(100), instant(1), {
            first_name: "Ada",
            last_name: "Lovelace",
            email: "ada@example.com",
            city: "London"
          })
          const result = yield* importContacts(
            org.id,
            [importRow(phone(200), { first_name: "New" }), importRow(phone(100), { first_name: "Augusta", zip: "W1" })],
            { now: instant(2) }
          )
          expect(result.created).toBe(1)
          expect(result.updated).toBe(1)
          expect(result.contacts.map((c) => [c.phone, c.status])).toEqual([
            [phone(200), "created"],
            [phone(100), "updated"]
          ])
          expect(result.contacts[1]!.uuid).toBe(ada)
          expect(result.contacts[0]!.uuid).not.toBe(ada)
          expect(yield* contactOf(org.id, ada)).toEqual({
            uuid: ada,
            phone: phone(100),
            phone_valid: true,
            marketing_opt_out_at: null,
            ...fixtures.details({
              first_name: "Augusta",
              last_name: "Lovelace",
              email: "ada@example.com",
              city: "London",
              zip: "W1"
            }),
            groups: [],
            labels: [],
            created_at: instant(1),
            updated_at: instant(2)
          })
          expect((yield* contactOf(org.id, result.contacts[0]!.uuid)).created_at).toBe(instant(2))
        })
      ))

    it.effect("creates groups named by name once and matches names case-insensitively after trimming", () =>
      run(
        Effect.gen(function* () {
          const { contacts, groups } = yield* Storage
          const org = yield* insertOrganization()
          const vip = yield* createGroup(org.id, "vip")
          const rows = [
            importRow(phone(100), {}, [groupNamed(" VIP ")]),
            importRow(phone(101), {}, [groupNamed("Team")]),
            importRow(phone(102), {}, [groupNamed("team"), groupNamed("Vip")])
          ]
          const request = fixtures.importRequest(rows, { now: instant(3) })
          expect((yield* contacts.importBulk(org.id, request))._tag).toBe("Imported")
          const page = yield* groups.list(org.id, { page: 1, per_page: 10 })
          const team = { uuid: request.ids[3], name: "Team", contacts_count: 2, created_at: instant(3) }
          expect(page).toEqual({
            items: [{ ...team, updated_at: instant(3) }, { ...vip, contacts_count: 2 }],
            total: 2
          })
          const [first, , third] = request.ids
          expect((yield* contactOf(org.id, first as ContactId)).groups).toEqual([{ uuid: vip.uuid, name: "vip" }])
          expect((yield* contactOf(org.id, third as ContactId)).groups).toEqual([
            { uuid: team.uuid, name: "Team" },
            { uuid: vip.uuid, name: "vip" }
          ])
        })
      ))

    it.effect("adds contacts to groups named by uuid; groups are only added", () =>
      run(
        Effect.gen(function* () {
          const { groups } = yield* Storage
          const org = yield* insertOrganization()
          const alpha = yield* createGroup(org.id, "alpha")
          const beta = yield* createGroup(org.id, "beta")
          yield* importContacts(org.id, [importRow(phone(100), {}, [groupWithId(alpha.uuid)])])
          const again = yield* importContacts(org.id, [
            importRow(phone(100), {}, [groupWithId(beta.uuid), groupWithId(alpha.uuid)])
          ])
          yield* importContacts(org.id, [importRow(phone(100), { city: "Paris" })])
          expect((yield* contactOf(org.id, again.contacts[0]!.uuid)).groups).toEqual([
            { uuid: alpha.uuid, name: "alpha" },
            { uuid: beta.uuid, name: "beta" }
          ])
          const page = yield* groups.list(org.id, { page: 1, per_page: 10 })
          expect(page.items.map((g) => g.contacts_count)).toEqual([1, 1])
        })
      ))

    it.effect("fails with GroupsNotFound for a group uuid that does not exist here, writing nothing", () =>
      run(
        Effect.gen(function* () {
          const { contacts, groups } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const known = yield* createGroup(org.id, "known")
          const foreign = yield* createGroup(other.id, "foreign")
          const unknown = fixtures.uuid() as GroupId
          const outcome = yield* contacts.importBulk(
            org.id,
            fixtures.importRequest([
              importRow(phone(100), { first_name: "A" }, [groupWithId(known.uuid), groupNamed("Fresh")]),
              importRow(phone(101), { first_name: "B" }, [groupWithId(unknown)]),
              importRow(phone(102), { first_name: "C" }, [groupWithId(foreign.uuid)])
            ])
          )
          expect(outcome._tag).toBe("GroupsNotFound")
          if (outcome._tag === "GroupsNotFound") expect(sorted(outcome.uuids)).toEqual(sorted([unknown, foreign.uuid]))
          expect(yield* contacts.list(org.id, { page: 1, per_page: 10 })).toEqual({ items: [], total: 0 })
          const page = yield* groups.list(org.id, { page: 1, per_page: 10 })
          expect(page).toEqual({ items: [known], total: 1 })
        })
      ))

    it.effect("accepts exactly as many new contacts as contactsLimit allows", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          yield* importContacts(org.id, [importRow(phone(1)), importRow(phone(2))])
          const result = yield* importContacts(
            org.id,
            [importRow(phone(3)), importRow(phone(4)), importRow(phone(5))],
            { contactsLimit: 5 }
          )
          expect(result.created).toBe(3)
          expect((yield* contacts.list(org.id, { page: 1, per_page: 10 })).total).toBe(5)
        })
      ))

    it.effect("one contact over contactsLimit → LimitExceeded with limit, usage and requested; nothing written", () =>
      run(
        Effect.gen(function* () {
          const { contacts, groups } = yield* Storage
          const org = yield* insertOrganization()
          const [a] = (yield* importContacts(org.id, [importRow(phone(1), { first_name: "A" }), importRow(phone(2))]))
            .contacts
          const before = yield* contactOf(org.id, a!.uuid)
          const outcome = yield* contacts.importBulk(
            org.id,
            fixtures.importRequest(
              [
                importRow(phone(1), { first_name: "Changed" }, [groupNamed("Fresh")]),
                importRow(phone(3)),
                importRow(phone(4)),
                importRow(phone(5))
              ],
              { contactsLimit: 4, now: instant(9) }
            )
          )
          expect(outcome).toEqual({ _tag: "LimitExceeded", limit: 4, usage: 2, requested: 3 })
          expect(yield* contactOf(org.id, a!.uuid)).toEqual(before)
          expect((yield* contacts.list(org.id, { page: 1, per_page: 10 })).total).toBe(2)
          expect((yield* groups.list(org.id, { page: 1, per_page: 10 })).total).toBe(0)
        })
      ))

    it.effect("updates never count against contactsLimit; a lowered limit blocks only new contacts", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          yield* importContacts(org.id, [importRow(phone(1)), importRow(phone(2)), importRow(phone(3))])
          const updates = yield* importContacts(
            org.id,
            [importRow(phone(1), { city: "Oslo" }), importRow(phone(2), { city: "Oslo" })],
            { contactsLimit: 2 }
          )
          expect([updates.created, updates.updated]).toEqual([0, 2])
          const mixed = yield* importContacts(org.id, [importRow(phone(3), { city: "Rome" }), importRow(phone(4))], {
            contactsLimit: 4
          })
          expect([mixed.created, mixed.updated]).toEqual([1, 1])
          const outcome = yield* contacts.importBulk(
            org.id,
            fixtures.importRequest([importRow(phone(1)), importRow(phone(5))], { contactsLimit: 0 })
          )
          expect(outcome).toEqual({ _tag: "LimitExceeded", limit: 0, usage: 4, requested: 1 })
        })
      ))

    it.effect("a null contactsLimit is unlimited; an empty import writes nothing", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          const rows = Array.from({ length: 150 }, (_, i) => importRow(phone(1000 + i), { first_name: `C${i}` }))
          const result = yield* importContacts(org.id, rows, { contactsLimit: null })
          expect([result.created, result.updated, result.contacts.length]).toEqual([150, 0, 150])
          expect(result.contacts.map((c) => c.phone)).toEqual(rows.map((row) => row.phone))
          expect(yield* importContacts(org.id, [], { contactsLimit: 0 })).toEqual({
            created: 0,
            updated: 0,
            contacts: []
          })
          expect((yield* contacts.list(org.id, { page: 1, per_page: 1 })).total).toBe(150)
        })
      ))

    it.effect("keeps organizations apart: the same phone and group name may exist in both", () =>
      run(
        Effect.gen(function* () {
          const { contacts, groups } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const mine = yield* importContacts(org.id, [importRow(phone(100), { first_name: "Mine" }, [groupNamed("VIP")])])
          const theirs = yield* importContacts(other.id, [
            importRow(phone(100), { first_name: "Theirs" }, [groupNamed("vip")])
          ])
          expect(theirs.contacts[0]!.status).toBe("created")
          expect(theirs.contacts[0]!.uuid).not.toBe(mine.contacts[0]!.uuid)
          expect((yield* contactOf(org.id, mine.contacts[0]!.uuid)).first_name).toBe("Mine")
          const [myGroup] = (yield* groups.list(org.id, { page: 1, per_page: 10 })).items
          const [theirGroup] = (yield* groups.list(other.id, { page: 1, per_page: 10 })).items
          expect([myGroup?.name, myGroup?.contacts_count, theirGroup?.name]).toEqual(["VIP", 1, "vip"])
          expect(theirGroup?.uuid).not.toBe(myGroup?.uuid)
          const limited = yield* contacts.importBulk(
            other.id,
            fixtures.importRequest([importRow(phone(101))], { contactsLimit: 2 })
          )
          expect(limited._tag).toBe("Imported")
        })
      ))
  })
}
