import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type GroupId, Storage } from "@switchboard/core"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { createGroup, importContacts, insertOrganization, runner } from "./support.js"

const { groupWithId, importRow, instant, phone } = fixtures

/**
 * Contract of `Storage.groups`: names unique per organization case-insensitively,
 * `contacts_count`, lists newest first, tenant isolation (docs/contacts.md "Records", "Rules").
 */
export const groupsContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("groups", () => {
    it.effect("creates a group with contacts_count 0 and finds it by uuid", () =>
      run(
        Effect.gen(function* () {
          const { groups } = yield* Storage
          const org = yield* insertOrganization()
          const uuid = fixtures.uuid() as GroupId
          const outcome = yield* groups.create(org.id, { uuid, name: "Customers", now: instant(1) })
          const group = { uuid, name: "Customers", contacts_count: 0, created_at: instant(1), updated_at: instant(1) }
          expect(outcome).toEqual({ _tag: "Written", group })
          expect(yield* groups.findById(org.id, uuid)).toEqual(Option.some(group))
          expect(yield* groups.findById(org.id, fixtures.uuid() as GroupId)).toEqual(Option.none())
        })
      ))

    it.effect("create → NameTaken when the name is used, compared case-insensitively after trimming", () =>
      run(
        Effect.gen(function* () {
          const { groups } = yield* Storage
          const org = yield* insertOrganization()
          const vip = yield* createGroup(org.id, "VIP")
          for (const name of ["VIP", "vip", " Vip "]) {
            const outcome = yield* groups.create(org.id, { uuid: fixtures.uuid() as GroupId, name, now: instant(2) })
            expect(outcome).toEqual({ _tag: "NameTaken" })
          }
          expect(yield* groups.list(org.id, { page: 1, per_page: 10 })).toEqual({ items: [vip], total: 1 })
        })
      ))

    it.effect("counts the contacts in each group", () =>
      run(
        Effect.gen(function* () {
          const { groups } = yield* Storage
          const org = yield* insertOrganization()
          const big = yield* createGroup(org.id, "big")
          const small = yield* createGroup(org.id, "small")
          yield* importContacts(org.id, [
            importRow(phone(1), {}, [groupWithId(big.uuid), groupWithId(small.uuid)]),
            importRow(phone(2), {}, [groupWithId(big.uuid)]),
            importRow(phone(3), {}, [groupWithId(big.uuid)])
          ])
          expect(yield* groups.findById(org.id, big.uuid)).toEqual(Option.some({ ...big, contacts_count: 3 }))
          expect(yield* groups.findById(org.id, small.uuid)).toEqual(Option.some({ ...small, contacts_count: 1 }))
        })
      ))

    it.effect("findByNames finds this organization's groups by name, case-insensitively after trimming", () =>
      run(
        Effect.gen(function* () {
          const { groups } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const vip = yield* createGroup(org.id, "VIP")
          const team = yield* createGroup(org.id, "team")
          yield* createGroup(org.id, "staff")
          yield* createGroup(other.id, "Unknown")
          yield* importContacts(org.id, [importRow(phone(1), {}, [groupWithId(team.uuid)])])
          const found = yield* groups.findByNames(org.id, [" vip ", "TEAM", "unknown", "team"])
          expect([...found].sort((a, b) => (a.uuid < b.uuid ? -1 : 1))).toEqual(
            [vip, { ...team, contacts_count: 1 }].sort((a, b) => (a.uuid < b.uuid ? -1 : 1))
          )
          expect(yield* groups.findByNames(org.id, [])).toEqual([])
          expect(yield* groups.findByNames(other.id, ["vip", "team"])).toEqual([])
        })
      ))

    it.effect("rename sets the name and updated_at and keeps the rest; its own name in another case is allowed", () =>
      run(
        Effect.gen(function* () {
          const { groups } = yield* Storage
          const org = yield* insertOrganization()
          const team = yield* createGroup(org.id, "team", instant(1))
          yield* importContacts(org.id, [importRow(phone(1), {}, [groupWithId(team.uuid)])])
          const renamed = { ...team, name: "Team", contacts_count: 1, updated_at: instant(4) }
          expect(yield* groups.rename(org.id, team.uuid, "Team", instant(4))).toEqual({
            _tag: "Written",
            group: renamed
          })
          expect(yield* groups.findById(org.id, team.uuid)).toEqual(Option.some(renamed))
          const other = { ...renamed, name: "Staff", updated_at: instant(5) }
          expect(yield* groups.rename(org.id, team.uuid, "Staff", instant(5))).toEqual({ _tag: "Written", group: other })
          yield* createGroup(org.id, "team")
          expect((yield* groups.list(org.id, { page: 1, per_page: 10 })).total).toBe(2)
        })
      ))

    it.effect("rename → NameTaken when another group has the name, NotFound for an unknown uuid; nothing written", () =>
      run(
        Effect.gen(function* () {
          const { groups } = yield* Storage
          const org = yield* insertOrganization()
          const alpha = yield* createGroup(org.id, "alpha", instant(1))
          const beta = yield* createGroup(org.id, "beta", instant(2))
          expect(yield* groups.rename(org.id, beta.uuid, " ALPHA ", instant(3))).toEqual({ _tag: "NameTaken" })
          expect(yield* groups.rename(org.id, fixtures.uuid() as GroupId, "gamma", instant(3))).toEqual({
            _tag: "NotFound"
          })
          expect(yield* groups.list(org.id, { page: 1, per_page: 10 })).toEqual({ items: [beta, alpha], total: 2 })
        })
      ))

    it.effect("lists newest first (created_at desc, uuid desc) with the total; a page past the end is empty", () =>
      run(
        Effect.gen(function* () {
          const { groups } = yield* Storage
          const org = yield* insertOrganization()
          expect(yield* groups.list(org.id, { page: 1, per_page: 20 })).toEqual({ items: [], total: 0 })
          const a = yield* createGroup(org.id, "a", instant(1))
          const c = yield* createGroup(org.id, "c", instant(3))
          const b = yield* createGroup(org.id, "b", instant(2))
          const tied = [yield* createGroup(org.id, "d", instant(4)), yield* createGroup(org.id, "e", instant(4))]
          yield* importContacts(org.id, [importRow(phone(1), {}, [groupWithId(c.uuid)])])
          const [d, e] = [...tied].sort((x, y) => (x.uuid < y.uuid ? 1 : -1))
          const expected = [d, e, { ...c, contacts_count: 1 }, b, a]
          expect(yield* groups.list(org.id, { page: 1, per_page: 20 })).toEqual({ items: expected, total: 5 })
          expect(yield* groups.list(org.id, { page: 2, per_page: 2 })).toEqual({ items: expected.slice(2, 4), total: 5 })
          expect(yield* groups.list(org.id, { page: 3, per_page: 2 })).toEqual({ items: [a], total: 5 })
          expect(yield* groups.list(org.id, { page: 4, per_page: 2 })).toEqual({ items: [], total: 5 })
        })
      ))

    it.effect("tenant isolation: another organization cannot see, rename or list a group, and may reuse its name", () =>
      run(
        Effect.gen(function* () {
          const { contacts, groups } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const mine = yield* createGroup(org.id, "VIP")
          expect(yield* groups.findById(other.id, mine.uuid)).toEqual(Option.none())
          expect(yield* groups.list(other.id, { page: 1, per_page: 10 })).toEqual({ items: [], total: 0 })
          expect(yield* groups.rename(other.id, mine.uuid, "Mine now", instant(2))).toEqual({ _tag: "NotFound" })
          const theirs = yield* createGroup(other.id, "vip")
          expect(theirs.uuid).not.toBe(mine.uuid)
          const outcome = yield* contacts.importBulk(
            other.id,
            fixtures.importRequest([importRow(phone(1), {}, [groupWithId(mine.uuid)])])
          )
          expect(outcome).toEqual({ _tag: "GroupsNotFound", uuids: [mine.uuid] })
          yield* importContacts(other.id, [importRow(phone(1), {}, [groupWithId(theirs.uuid)])])
          expect(yield* groups.findById(org.id, mine.uuid)).toEqual(Option.some(mine))
          expect(yield* groups.list(org.id, { page: 1, per_page: 10 })).toEqual({ items: [mine], total: 1 })
        })
      ))
  })
}
