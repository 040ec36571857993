import type { Effect, Option } from "effect"
import type { Page, PageRequest } from "../model/common.js"
import type { Group, GroupId } from "../model/groups.js"
import type { OrganizationId } from "../model/organizations.js"
import type { StorageError } from "./errors.js"

/**
 * Outcome of creating or renaming a group.
 *
 * @category storage
 */
export type GroupWriteOutcome =
  | { readonly _tag: "Written"; readonly group: Group }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "NameTaken" }

/**
 * Contact groups (audiences) of one organization. Names are unique per organization,
 * compared with {@link nameKey} (trimmed, lowercase).
 *
 * @category storage
 */
export interface GroupRepository {
  /** Inserts a group with `contacts_count` 0; `NameTaken` when the name is used. */
  readonly create: (
    organizationId: OrganizationId,
    group: { readonly uuid: GroupId; readonly name: string; readonly now: string }
  ) => Effect.Effect<GroupWriteOutcome, StorageError>
  /** Renames a group and sets `updated_at`; `NotFound` or `NameTaken` write nothing. */
  readonly rename: (
    organizationId: OrganizationId,
    id: GroupId,
    name: string,
    now: string
  ) => Effect.Effect<GroupWriteOutcome, StorageError>
  /** The group with this uuid. */
  readonly findById: (organizationId: OrganizationId, id: GroupId) => Effect.Effect<Option.Option<Group>, StorageError>
  /** The groups whose names match any of `names` by {@link nameKey}, in no particular order. */
  readonly findByNames: (
    organizationId: OrganizationId,
    names: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<Group>, StorageError>
  /** One page of groups, newest first, with the total. */
  readonly list: (organizationId: OrganizationId, page: PageRequest) => Effect.Effect<Page<Group>, StorageError>
}
