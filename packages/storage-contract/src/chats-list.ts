import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  type Chat,
  type ChatFilters,
  type ChatId,
  type ChatSort,
  type ContactId,
  type GroupId,
  type LabelId,
  type OrganizationId,
  Storage
} from "@switchboard/core"
import { patchChat, receive, uuidsOf } from "./chat-support.js"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { assignLabel, createGroup, createLabel, importContacts, insertOrganization, runner } from "./support.js"

const { instant, phone } = fixtures

const DEFAULT_SORT: ChatSort = { by: "last_message_at", order: "desc" }

/** Every chat matching `filters`, walked in pages of `size` with listAfter. */
const walk = (organizationId: OrganizationId, filters: ChatFilters, sort: ChatSort, size: number) =>
  Effect.gen(function* () {
    const { chats } = yield* Storage
    const seen: Array<Chat> = []
    for (;;) {
      const last = seen[seen.length - 1]
      const after = last === undefined ? null : { value: last[sort.by], uuid: last.uuid }
      const page = yield* chats.listAfter(organizationId, filters, sort, after, size)
      expect(page.length).toBeLessThanOrEqual(size)
      seen.push(...page)
      if (page.length < size) return seen
    }
  })

/** The uuids of the chats matching `filters`, default sort. */
const listed = (organizationId: OrganizationId, filters: ChatFilters, sort: ChatSort = DEFAULT_SORT) =>
  Effect.map(walk(organizationId, filters, sort, 100), uuidsOf)

/** Expects listPage over `filters` to give the same order as the walk, and the total. */
const expectPages = (organizationId: OrganizationId, filters: ChatFilters, sort: ChatSort, expected: ReadonlyArray<ChatId>) =>
  Effect.gen(function* () {
    const { chats } = yield* Storage
    for (const page of [1, 2, 3]) {
      const result = yield* chats.listPage(organizationId, filters, sort, { page, per_page: 2 })
      expect(uuidsOf(result.items)).toEqual(expected.slice((page - 1) * 2, page * 2))
      expect(result.total).toBe(expected.length)
    }
  })

/**
 * Contract of `Storage.chats.listAfter` and `listPage` (docs/chats.md
 * "`GET /chats`"): every filter alone and together (AND, lists match any), the three
 * sort keys both ways with uuid tie-breaks, chats without messages, keyset and offset
 * pages, search following contact changes, tenant isolation.
 */
export const chatsListContract = (options: StorageContractOptions): void => {
  const run = runner(options)

  describe("chats list", () => {
    it.effect("sorts by each key both ways, ties by uuid in the same direction; no messages sorts before any time", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const a = yield* receive(org.id, phone(1), 5)
          const b = yield* receive(org.id, phone(2), 5)
          const c = yield* receive(org.id, phone(3), 1)
          const contactId = (yield* importContacts(org.id, [fixtures.importRow(phone(4), { first_name: "Quiet" })], { now: instant(0) })).contacts[0]!.uuid
          const ensured = yield* chats.ensure(org.id, contactId, { uuid: fixtures.uuid() as ChatId, status: "open" }, instant(2))
          const d = ensured._tag === "Ensured" ? ensured.chat : expect.fail("ensured")
          yield* patchChat(org.id, c.uuid, { favorite: true }, instant(9))
          const cases: ReadonlyArray<readonly [ChatSort, ReadonlyArray<Chat>]> = [
            [{ by: "last_message_at", order: "desc" }, [b, a, c, d]],
            [{ by: "last_message_at", order: "asc" }, [d, c, a, b]],
            [{ by: "created_at", order: "desc" }, [b, a, d, c]],
            [{ by: "created_at", order: "asc" }, [c, d, a, b]],
            [{ by: "updated_at", order: "desc" }, [c, b, a, d]],
            [{ by: "updated_at", order: "asc" }, [d, a, b, c]]
          ]
          for (const [sort, expected] of cases) {
            expect(yield* listed(org.id, {}, sort), JSON.stringify(sort)).toEqual(uuidsOf(expected))
            expect(uuidsOf(yield* walk(org.id, {}, sort, 1)), JSON.stringify(sort)).toEqual(uuidsOf(expected))
            yield* expectPages(org.id, {}, sort, uuidsOf(expected))
          }
        })
      ))

    it.effect("keyset pages over many ties: no chat twice, none missing, each page after the last one", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const ids: Array<ChatId> = []
          for (let n = 0; n < 23; n++) ids.push((yield* receive(org.id, phone(n), n % 3)).uuid)
          for (const sort of [DEFAULT_SORT, { by: "last_message_at", order: "asc" }, { by: "created_at", order: "desc" }] as const) {
            for (const size of [1, 4, 7]) {
              const walked = uuidsOf(yield* walk(org.id, {}, sort, size))
              expect(new Set(walked).size).toBe(23)
              expect(walked).toEqual(yield* listed(org.id, {}, sort))
            }
          }
        })
      ))

    it.effect("status, assigned_to (a user or unassigned), favorite and unread filter on equality", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const [a, b, c, d] = [yield* receive(org.id, phone(1), 4), yield* receive(org.id, phone(2), 3), yield* receive(org.id, phone(3), 2), yield* receive(org.id, phone(4), 1)]
          yield* patchChat(org.id, a.uuid, { status: "pending", assigned_to: "u1", favorite: true })
          yield* patchChat(org.id, b.uuid, { status: "closed", assigned_to: "u2", unread_count: 0 })
          yield* patchChat(org.id, c.uuid, { assigned_to: "u1", unread_count: 0, favorite: true })
          const cases: ReadonlyArray<readonly [ChatFilters, ReadonlyArray<Chat>]> = [
            [{ status: "open" }, [c, d]],
            [{ status: "pending" }, [a]],
            [{ status: "resolved" }, []],
            [{ assignedTo: "u1" }, [a, c]],
            [{ assignedTo: "U1" }, []],
            [{ assignedTo: null }, [d]],
            [{ favorite: true }, [a, c]],
            [{ favorite: false }, [b, d]],
            [{ unread: true }, [a, d]],
            [{ unread: false }, [b, c]],
            [{ assignedTo: "u1", favorite: true, unread: false }, [c]],
            [{ status: "open", assignedTo: null, unread: true, favorite: false }, [d]]
          ]
          for (const [filters, expected] of cases) {
            expect(yield* listed(org.id, filters), JSON.stringify(filters)).toEqual(uuidsOf(expected))
          }
          yield* expectPages(org.id, { favorite: true }, DEFAULT_SORT, uuidsOf([a, c]))
        })
      ))

    it.effect("group_uuid and tag_uuid: the contact is in any of the groups / carries any of the labels", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const [g1, g2, g3] = [yield* createGroup(org.id, "g1"), yield* createGroup(org.id, "g2"), yield* createGroup(org.id, "g3")]
          const [l1, l2] = [yield* createLabel(org.id, "l1"), yield* createLabel(org.id, "l2")]
          const rows = [
            fixtures.importRow(phone(1), { first_name: "A" }, [fixtures.groupWithId(g1.uuid), fixtures.groupWithId(g2.uuid)]),
            fixtures.importRow(phone(2), { first_name: "B" }, [fixtures.groupWithId(g2.uuid)]),
            fixtures.importRow(phone(3), { first_name: "C" })
          ]
          const ids = (yield* importContacts(org.id, rows)).contacts.map((contact) => contact.uuid)
          yield* assignLabel(org.id, l1, [ids[0]!, ids[2]!])
          yield* assignLabel(org.id, l2, [ids[2]!])
          const [a, b, c] = [yield* receive(org.id, phone(1), 3), yield* receive(org.id, phone(2), 2), yield* receive(org.id, phone(3), 1)]
          const cases: ReadonlyArray<readonly [ChatFilters, ReadonlyArray<Chat>]> = [
            [{ groupIds: [g1.uuid] }, [a]],
            [{ groupIds: [g2.uuid] }, [a, b]],
            [{ groupIds: [g1.uuid, g2.uuid] }, [a, b]],
            [{ groupIds: [g3.uuid] }, []],
            [{ labelIds: [l1.uuid] }, [a, c]],
            [{ labelIds: [l2.uuid, l1.uuid] }, [a, c]],
            [{ groupIds: [g2.uuid], labelIds: [l1.uuid] }, [a]],
            [{ groupIds: [g1.uuid, g2.uuid], labelIds: [l2.uuid] }, []]
          ]
          for (const [filters, expected] of cases) {
            expect(yield* listed(org.id, filters), JSON.stringify(filters)).toEqual(uuidsOf(expected))
            expect(yield* listed(org.id, filters, { by: "created_at", order: "asc" })).toEqual(uuidsOf(expected).reverse())
          }
          yield* expectPages(org.id, { groupIds: [g2.uuid, g1.uuid] }, DEFAULT_SORT, uuidsOf([a, b]))
        })
      ))

    it.effect("group and label filters follow memberships changed after the chat exists, and never mix groups with labels", () =>
      run(
        Effect.gen(function* () {
          const { labels } = yield* Storage
          const org = yield* insertOrganization()
          const [a, b] = [yield* receive(org.id, phone(1), 2), yield* receive(org.id, phone(2), 1)]
          const group = yield* createGroup(org.id, "Later")
          const label = yield* createLabel(org.id, "Later")
          // Created in the order of their first messages: until a later message, every sort agrees.
          const expectListed = (filters: ChatFilters, expected: ReadonlyArray<ChatId>, byCreation = true) =>
            Effect.gen(function* () {
              const sorts: ReadonlyArray<ChatSort> = [DEFAULT_SORT, { by: "last_message_at", order: "asc" }]
              for (const sort of byCreation ? [...sorts, { by: "created_at", order: "desc" } as const] : sorts) {
                const order = sort.order === "asc" ? [...expected].reverse() : expected
                expect(yield* listed(org.id, filters, sort), `${JSON.stringify(filters)} ${JSON.stringify(sort)}`).toEqual(order)
              }
            })
          yield* expectListed({ groupIds: [group.uuid] }, [])
          yield* importContacts(org.id, [fixtures.importRow(phone(2), {}, [fixtures.groupWithId(group.uuid)])])
          yield* assignLabel(org.id, label, [a.contact.uuid, b.contact.uuid])
          yield* expectListed({ groupIds: [group.uuid] }, [b.uuid])
          yield* expectListed({ labelIds: [label.uuid] }, [a.uuid, b.uuid])
          yield* expectListed({ groupIds: [label.uuid as string as GroupId] }, [])
          yield* expectListed({ labelIds: [group.uuid as string as LabelId] }, [])
          // A new message moves the chat in the filtered list too.
          yield* receive(org.id, phone(2), 5)
          yield* expectListed({ labelIds: [label.uuid] }, [b.uuid, a.uuid], false)
          yield* expectListed({ labelIds: [label.uuid], lastMessageFrom: instant(3) }, [b.uuid], false)
          expect(yield* labels.deleteMany(org.id, [label.uuid])).toEqual([label.uuid])
          yield* expectListed({ labelIds: [label.uuid] }, [])
        })
      ))

    it.effect("last-message bounds are inclusive and leave out chats without messages", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const [a, b, c] = [yield* receive(org.id, phone(1), 10), yield* receive(org.id, phone(2), 20), yield* receive(org.id, phone(3), 30)]
          const contactId = (yield* importContacts(org.id, [fixtures.importRow(phone(4), { first_name: "Quiet" })])).contacts[0]!.uuid
          yield* chats.ensure(org.id, contactId, { uuid: fixtures.uuid() as ChatId, status: "open" }, instant(15))
          const cases: ReadonlyArray<readonly [ChatFilters, ReadonlyArray<Chat>]> = [
            [{ lastMessageFrom: instant(20) }, [c, b]],
            [{ lastMessageTo: instant(20) }, [b, a]],
            [{ lastMessageFrom: instant(10), lastMessageTo: instant(20) }, [b, a]],
            [{ lastMessageFrom: instant(11), lastMessageTo: instant(29) }, [b]],
            [{ lastMessageFrom: instant(31) }, []],
            [{ lastMessageTo: instant(9) }, []],
            [{ lastMessageFrom: instant(0), status: "open", favorite: false }, [c, b, a]]
          ]
          for (const [filters, expected] of cases) {
            expect(yield* listed(org.id, filters), JSON.stringify(filters)).toEqual(uuidsOf(expected))
            expect(yield* listed(org.id, filters, { by: "created_at", order: "desc" })).toEqual(uuidsOf(expected))
          }
        })
      ))

    it.effect("search: case-insensitive substring of first, last or full name, email, or the phone's digits", () =>
      run(
        Effect.gen(function* () {
          const org = yield* insertOrganization()
          const rows = [
            fixtures.importRow(phone(11), { first_name: "Ada", last_name: "Lovelace", email: "ada@engine.org" }),
            fixtures.importRow(phone(22), { first_name: "Élodie", last_name: "Durand" }),
            fixtures.importRow(phone(33), { first_name: "Grace", email: "GRACE@Navy.mil" })
          ]
          yield* importContacts(org.id, rows)
          const [a, e, g] = [yield* receive(org.id, phone(11), 3), yield* receive(org.id, phone(22), 2), yield* receive(org.id, phone(33), 1)]
          const cases: ReadonlyArray<readonly [string, ReadonlyArray<Chat>]> = [
            ["ada", [a]],
            ["love", [a]],
            ["ada lovelace", [a]],
            ["engine.org", [a]],
            ["élodie", [e]],
            ["rand", [e]],
            ["navy", [g]],
            ["grace@navy.mil", [g]],
            ["a", [a, e, g]],
            ["ce", [a, g]],
            ["1415555", [a, e, g]],
            ["5550022", [e]],
            ["33", [g]],
            ["ada durand", []],
            ["zzz", []]
          ]
          for (const [search, expected] of cases) {
            expect(yield* listed(org.id, { search }), search).toEqual(uuidsOf(expected))
          }
          expect(yield* listed(org.id, { search: "a", status: "open", unread: true, lastMessageFrom: instant(2) })).toEqual(uuidsOf([a, e]))
        })
      ))

    it.effect("search follows the contact: a changed name or phone is found, the old one no longer", () =>
      run(
        Effect.gen(function* () {
          const { contacts } = yield* Storage
          const org = yield* insertOrganization()
          const chat = yield* receive(org.id, phone(1), 0, { firstName: "Margaret" })
          expect(yield* listed(org.id, { search: "marg" })).toEqual([chat.uuid])
          yield* contacts.update(org.id, chat.contact.uuid, { phone: phone(77), details: { first_name: "Katherine", email: "kj@nasa.gov" } }, instant(1))
          expect(yield* listed(org.id, { search: "marg" })).toEqual([])
          expect(yield* listed(org.id, { search: "katherine" })).toEqual([chat.uuid])
          expect(yield* listed(org.id, { search: "nasa" })).toEqual([chat.uuid])
          expect(yield* listed(org.id, { search: "5550077" })).toEqual([chat.uuid])
          expect(yield* listed(org.id, { search: "5550001" })).toEqual([])
          yield* importContacts(org.id, [fixtures.importRow(phone(77), { last_name: "Johnson" })])
          expect(yield* listed(org.id, { search: "johnson" })).toEqual([chat.uuid])
        })
      ))

    it.effect("lists only the organization's chats, whatever the filters", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const group = yield* createGroup(other.id, "g")
          yield* importContacts(other.id, [fixtures.importRow(phone(1), { first_name: "Ada" }, [fixtures.groupWithId(group.uuid)])])
          const theirs = yield* receive(other.id, phone(1), 1)
          const mine = yield* receive(org.id, phone(1), 2, { firstName: "Ada" })
          for (const filters of [{}, { search: "ada" }, { groupIds: [group.uuid] }, { status: "open" }, { unread: true }] as const) {
            const expected = "groupIds" in filters ? [] : [mine.uuid]
            expect(yield* listed(org.id, filters), JSON.stringify(filters)).toEqual(expected)
            expect((yield* chats.listPage(org.id, filters, DEFAULT_SORT, { page: 1, per_page: 10 })).total).toBe(expected.length)
          }
          expect(yield* listed(other.id, {})).toEqual([theirs.uuid])
          // A position naming another organization's chat only positions: nothing of theirs shows.
          const after = { value: instant(3), uuid: theirs.uuid }
          expect(uuidsOf(yield* chats.listAfter(org.id, {}, DEFAULT_SORT, after, 10))).toEqual([mine.uuid])
        })
      ))

    it.effect("list records are whole chat records", () =>
      run(
        Effect.gen(function* () {
          const { chats } = yield* Storage
          const org = yield* insertOrganization()
          const chat = yield* receive(org.id, phone(1), 0)
          const contactId: ContactId = chat.contact.uuid
          const group = yield* createGroup(org.id, "Group")
          yield* importContacts(org.id, [fixtures.importRow(phone(1), {}, [fixtures.groupWithId(group.uuid)])])
          const stored = yield* chats.findByContact(org.id, contactId)
          expect(yield* chats.listAfter(org.id, {}, DEFAULT_SORT, null, 5)).toEqual([stored._tag === "Some" ? stored.value : null])
          expect((yield* chats.listPage(org.id, {}, DEFAULT_SORT, { page: 1, per_page: 5 })).items).toEqual([
            stored._tag === "Some" ? stored.value : null
          ])
        })
      ))
  })
}
