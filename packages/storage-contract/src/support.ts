import { expect } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import {
  type Channel,
  type Contact,
  type ContactId,
  type ContactImportResult,
  type ContactImportRow,
  type Group,
  type Label,
  type Organization,
  type OrganizationId,
  Storage,
  type StorageService
} from "@switchboard/core"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"

// Effectful helpers shared by the topic modules (not exported from the package).

/** Runs a test body on a fresh store built from `options.makeLayer()`. */
export const runner =
  ({ makeLayer }: StorageContractOptions) =>
  <A, E>(body: Effect.Effect<A, E, Storage>): Effect.Effect<A, unknown> =>
    body.pipe(Effect.provide(makeLayer()))

/**
 * With `options.makeSharedLayers`, runs a test body on two stores over one fresh underlying
 * store (both built for the test and released after it; the body's own `Storage` is the
 * first); `undefined` when the adapter does not give them.
 */
export const sharedRunner = ({ makeSharedLayers }: StorageContractOptions) =>
  makeSharedLayers === undefined
    ? undefined
    : <A, E>(body: (first: StorageService, second: StorageService) => Effect.Effect<A, E, Storage>): Effect.Effect<A, unknown> =>
        Effect.scoped(
          Effect.gen(function* () {
            const [firstLayer, secondLayer] = makeSharedLayers()
            const first = Context.get(yield* Layer.build(firstLayer), Storage)
            const second = Context.get(yield* Layer.build(secondLayer), Storage)
            return yield* Effect.provideService(body(first, second), Storage, first)
          })
        )

/** Inserts a fresh organization (every contact, group and label needs one first). */
export const insertOrganization = (overrides: Partial<Organization> = {}) =>
  Effect.gen(function* () {
    const { organizations } = yield* Storage
    const organization = fixtures.organization(overrides)
    yield* organizations.insert(organization)
    return organization
  })

/** Imports `rows` and expects them imported (no limit unless given); returns the result. */
export const importContacts = (
  organizationId: OrganizationId,
  rows: ReadonlyArray<ContactImportRow>,
  options: { readonly now?: string; readonly contactsLimit?: number | null } = {}
) =>
  Effect.gen(function* () {
    const { contacts } = yield* Storage
    const outcome = yield* contacts.importBulk(organizationId, fixtures.importRequest(rows, options))
    if (outcome._tag !== "Imported") return expect.fail(`expected Imported, got ${JSON.stringify(outcome)}`)
    return outcome.result
  })

/** Imports one contact with `phone` and `details` at `now`; returns its uuid. */
export const importContact = (
  organizationId: OrganizationId,
  phone: string,
  now: string = fixtures.instant(0),
  details: ContactImportRow["details"] = { first_name: "Ada" }
) =>
  Effect.map(
    importContacts(organizationId, [fixtures.importRow(phone, details)], { now }),
    (result: ContactImportResult) => result.contacts[0]!.uuid
  )

/** The stored contact, which must exist. */
export const contactOf = (organizationId: OrganizationId, id: ContactId) =>
  Effect.flatMap(Storage, ({ contacts }) => contacts.findById(organizationId, id)).pipe(
    Effect.map((found): Contact => Option.getOrThrowWith(found, () => new Error(`contact ${id} is missing`)))
  )

/** Creates a group and expects it written; returns it. */
export const createGroup = (organizationId: OrganizationId, name: string, now: string = fixtures.instant(0)) =>
  Effect.gen(function* () {
    const { groups } = yield* Storage
    const outcome = yield* groups.create(organizationId, { uuid: fixtures.uuid() as Group["uuid"], name, now })
    if (outcome._tag !== "Written") return expect.fail(`expected Written, got ${outcome._tag}`)
    return outcome.group
  })

/** Creates a label without a limit and expects it created; returns it. */
export const createLabel = (
  organizationId: OrganizationId,
  name: string,
  color = "#808080",
  now: string = fixtures.instant(0)
) =>
  Effect.gen(function* () {
    const { labels } = yield* Storage
    const outcome = yield* labels.create(
      organizationId,
      { uuid: fixtures.uuid() as Label["uuid"], name, color, now },
      null
    )
    if (outcome._tag !== "Created") return expect.fail(`expected Created, got ${outcome._tag}`)
    return outcome.label
  })

/** Puts `label` on `contactIds` and expects it assigned. */
export const assignLabel = (organizationId: OrganizationId, label: Label, contactIds: ReadonlyArray<ContactId>) =>
  Effect.gen(function* () {
    const { labels } = yield* Storage
    expect(yield* labels.assign(organizationId, label.uuid, contactIds, fixtures.instant(0))).toEqual({
      _tag: "Assigned"
    })
  })

/** The `contacts_count` of a group (`None` when there is no such group). */
export const groupCount = (organizationId: OrganizationId, group: Group) =>
  Effect.flatMap(Storage, ({ groups }) => groups.findById(organizationId, group.uuid)).pipe(
    Effect.map((found) => Option.map(found, (g) => g.contacts_count))
  )

/** The `contacts_count` of a label (`None` when there is no such label). */
export const labelCount = (organizationId: OrganizationId, label: Label) =>
  Effect.flatMap(Storage, ({ labels }) => labels.findById(organizationId, label.uuid)).pipe(
    Effect.map((found) => Option.map(found, (l) => l.contacts_count))
  )

/** Sorts a copy of `values` (compare sets of uuids whose order no rule fixes). */
export const sorted = <A extends string>(values: ReadonlyArray<A>): Array<A> => [...values].sort()

/** Inserts a channel (limit 20) and expects it inserted; returns it. */
export const insertChannel = (organizationId: OrganizationId, overrides: Partial<Channel> = {}, sealed = "v1.sealed") =>
  Effect.gen(function* () {
    const { channels } = yield* Storage
    const channel = fixtures.channelRecord(overrides)
    const outcome = yield* channels.insert(organizationId, { channel, access_token_sealed: sealed }, 20)
    if (outcome._tag !== "Inserted") return expect.fail(`expected Inserted, got ${outcome._tag}`)
    return channel
  })
