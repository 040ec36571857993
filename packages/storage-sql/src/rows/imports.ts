import { type ContactImportRow, type GroupId, nameKey } from "@switchboard/core"

// The pure steps of a contact import (`contacts.importRows`): the groups its rows name and
// the fresh ids it hands out.

/**
 * The groups the rows of an import name, resolved with one query by uuid and one by name key.
 *
 * @category imports
 */
export interface ResolvedGroups {
  /** Uuids named by the rows that are no group of this organization, first-seen order. */
  readonly missing: ReadonlyArray<GroupId>
  /** Name key → uuid of the groups named by name that exist (and, later, were created). */
  readonly byKey: Map<string, string>
  /** Groups named by name that do not exist yet, first-seen order, name trimmed. */
  readonly toCreate: ReadonlyArray<{ readonly key: string; readonly name: string }>
}

/**
 * The groups the rows name: by uuid, and by name (name key → the first name, trimmed).
 *
 * @category imports
 */
export const groupsNamedBy = (
  rows: ReadonlyArray<ContactImportRow>
): { readonly ids: Set<GroupId>; readonly names: Map<string, string> } => {
  const ids = new Set<GroupId>()
  const names = new Map<string, string>()
  for (const group of rows.flatMap((row) => row.groups)) {
    if (group._tag === "ById") ids.add(group.uuid)
    else if (!names.has(nameKey(group.name))) names.set(nameKey(group.name), group.name.trim())
  }
  return { ids, names }
}

/**
 * The {@link ResolvedGroups} of the groups named ({@link groupsNamedBy}) from what the store
 * found: the uuids of the organization's groups among `ids` (`known`) and the uuid of each
 * name key found (`byKey`).
 *
 * @category imports
 */
export const resolvedGroups = (
  named: { readonly ids: Set<GroupId>; readonly names: Map<string, string> },
  known: Set<string>,
  byKey: Map<string, string>
): ResolvedGroups => ({
  missing: [...named.ids].filter((id) => !known.has(id)),
  byKey,
  toCreate: [...named.names].filter(([key]) => !byKey.has(key)).map(([key, name]) => ({ key, name }))
})

/**
 * Hands out the request's fresh ids in order; throws when they run out.
 *
 * @category imports
 */
export const freshIds = (ids: ReadonlyArray<string>): (() => string) => {
  let next = 0
  return () => {
    const id = ids[next]
    if (id === undefined) throw new Error("ContactImportRequest.ids holds too few ids")
    next += 1
    return id
  }
}
