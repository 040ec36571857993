import { Context, Effect, Layer, Option } from "effect"
import { InvalidInput, RecordNotFound, UniqueValueTaken } from "../model/commonErrors.js"
import { nowIso } from "../internal/time.js"
import { validName } from "../model/names.js"
import type { OrganizationId } from "../model/organizations.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { Page, PageRequest } from "../model/common.js"
import type { StorageError } from "../storage/errors.js"
import { Storage } from "../storage/Storage.js"
import type { Group, GroupId } from "../model/groups.js"
import type { GroupWriteOutcome } from "../storage/GroupRepository.js"

/**
 * Contact groups (audiences) of an organization (`/contact-groups`, docs/contacts.md). Names are
 * trimmed, 1–255 characters, unique per organization case-insensitively
 * (`group_name_taken`).
 *
 * @category services
 */
export interface ContactGroupsService {
  /** Creates an empty group. */
  readonly create: (
    organizationId: OrganizationId,
    name: string
  ) => Effect.Effect<Group, InvalidInput | UniqueValueTaken | StorageError>
  /** Renames a group. */
  readonly rename: (
    organizationId: OrganizationId,
    id: GroupId,
    name: string
  ) => Effect.Effect<Group, InvalidInput | UniqueValueTaken | RecordNotFound | StorageError>
  /** One group. */
  readonly get: (organizationId: OrganizationId, id: GroupId) => Effect.Effect<Group, RecordNotFound | StorageError>
  /** One page of groups, newest first (an extension: docs/contacts.md "Endpoints"). */
  readonly list: (organizationId: OrganizationId, page: PageRequest) => Effect.Effect<Page<Group>, StorageError>
}

/**
 * Tag of the {@link ContactGroupsService}.
 *
 * @category services
 */
export class ContactGroups extends Context.Tag("@switchboard/core/ContactGroups")<ContactGroups, ContactGroupsService>() {
  static readonly layer: Layer.Layer<ContactGroups, never, Storage | SecureRandom> = Layer.effect(
    ContactGroups,
    Effect.suspend(() => make)
  )
}

const notFound = (id: string) => new RecordNotFound({ missing: [{ resource: "group", uuid: id }] })

const make = Effect.gen(function* () {
  const storage = yield* Storage
  const random = yield* SecureRandom

  const written = (
    outcome: GroupWriteOutcome,
    id: string,
    name: string
  ): Effect.Effect<Group, RecordNotFound | UniqueValueTaken> => {
    switch (outcome._tag) {
      case "Written":
        return Effect.succeed(outcome.group)
      case "NotFound":
        return Effect.fail(notFound(id))
      case "NameTaken":
        return Effect.fail(new UniqueValueTaken({ code: "group_name_taken", field: "name", value: name }))
    }
  }

  const service: ContactGroupsService = {
    create: Effect.fn("ContactGroups.create")(function* (organizationId, rawName) {
      const name = yield* validName(rawName)
      const uuid = (yield* random.uuid()) as GroupId
      const outcome = yield* storage.groups.create(organizationId, { uuid, name, now: yield* nowIso })
      // A create never answers NotFound; if a store did, that is a bug, not a client error.
      return yield* written(outcome, uuid, name).pipe(Effect.catchTag("RecordNotFound", Effect.die))
    }),
    rename: Effect.fn("ContactGroups.rename")(function* (organizationId, id, rawName) {
      const name = yield* validName(rawName)
      const outcome = yield* storage.groups.rename(organizationId, id, name, yield* nowIso)
      return yield* written(outcome, id, name)
    }),
    get: (organizationId, id) =>
      Effect.flatMap(storage.groups.findById(organizationId, id), (group) =>
        Option.match(group, { onNone: () => notFound(id), onSome: Effect.succeed })
      ),
    list: (organizationId, page) => storage.groups.list(organizationId, page)
  }
  return service
})
