import { Effect, Option } from "effect"
import type { ContactId } from "../model/contacts.js"
import type { Group, GroupId } from "../model/groups.js"
import type { Label, LabelId } from "../model/labels.js"
import type { OrganizationId } from "../model/organizations.js"
import { pageOf, type MemoryState, type NamedRow } from "./state.js"
import { nameKey } from "../model/names.js"
import type { GroupRepository } from "../storage/GroupRepository.js"
import type { LabelRepository } from "../storage/LabelRepository.js"

/** The group record of a stored row. */
export const groupOf = (state: MemoryState, row: NamedRow<GroupId>): Group => ({
  uuid: row.uuid,
  name: row.name,
  contacts_count: state.groupMembers.get(row.uuid)?.size ?? 0,
  created_at: row.created_at,
  updated_at: row.updated_at
})

/** The label record of a stored row. */
export const labelOf = (state: MemoryState, row: NamedRow<LabelId>): Label => ({
  uuid: row.uuid,
  name: row.name,
  color: row.color,
  contacts_count: state.labelledContacts.get(row.uuid)?.size ?? 0,
  created_at: row.created_at,
  updated_at: row.updated_at
})

/** The row of `map` owned by the organization whose name has this key, if any. */
export const findByName = <Id>(
  map: Map<Id, NamedRow<Id>>,
  organizationId: OrganizationId,
  key: string
): NamedRow<Id> | undefined => {
  for (const row of map.values()) if (row.organization_id === organizationId && row.name_key === key) return row
  return undefined
}

const rowsByNames = <Id>(map: Map<Id, NamedRow<Id>>, organizationId: OrganizationId, names: ReadonlyArray<string>) => {
  const keys = new Set(names.map(nameKey))
  return [...map.values()].filter((row) => row.organization_id === organizationId && keys.has(row.name_key))
}

const owned = <Id>(map: Map<Id, NamedRow<Id>>, organizationId: OrganizationId, id: Id) => {
  const row = map.get(id)
  return row !== undefined && row.organization_id === organizationId ? row : undefined
}

/** The groups repository of the memory store. */
export const groupRepository = (state: MemoryState): GroupRepository => ({
  create: (organizationId, { uuid, name, now }) =>
    Effect.sync(() => {
      if (findByName(state.groups, organizationId, nameKey(name)) !== undefined) return { _tag: "NameTaken" } as const
      const row = { organization_id: organizationId, uuid, name, name_key: nameKey(name), color: "", created_at: now, updated_at: now }
      state.groups.set(uuid, row)
      return { _tag: "Written", group: groupOf(state, row) } as const
    }),
  rename: (organizationId, id, name, now) =>
    Effect.sync(() => {
      const row = owned(state.groups, organizationId, id)
      if (row === undefined) return { _tag: "NotFound" } as const
      const other = findByName(state.groups, organizationId, nameKey(name))
      if (other !== undefined && other.uuid !== id) return { _tag: "NameTaken" } as const
      const renamed = { ...row, name, name_key: nameKey(name), updated_at: now }
      state.groups.set(id, renamed)
      return { _tag: "Written", group: groupOf(state, renamed) } as const
    }),
  findById: (organizationId, id) =>
    Effect.sync(() => Option.map(Option.fromNullable(owned(state.groups, organizationId, id)), (row) => groupOf(state, row))),
  findByNames: (organizationId, names) =>
    Effect.sync(() => rowsByNames(state.groups, organizationId, names).map((row) => groupOf(state, row))),
  list: (organizationId, request) =>
    Effect.sync(() => {
      const page = pageOf(state.groups.values(), organizationId, request)
      return { items: page.items.map((row) => groupOf(state, row)), total: page.total }
    })
})

/** The labels repository of the memory store. */
export const labelRepository = (state: MemoryState): LabelRepository => ({
  create: (organizationId, { uuid, name, color, now }, labelLimit) =>
    Effect.sync(() => {
      if (findByName(state.labels, organizationId, nameKey(name)) !== undefined) return { _tag: "NameTaken" } as const
      if (labelLimit !== null) {
        let usage = 0
        for (const row of state.labels.values()) if (row.organization_id === organizationId) usage++
        if (usage >= labelLimit) return { _tag: "LimitExceeded", limit: labelLimit, usage } as const
      }
      const row = { organization_id: organizationId, uuid, name, name_key: nameKey(name), color, created_at: now, updated_at: now }
      state.labels.set(uuid, row)
      return { _tag: "Created", label: labelOf(state, row) } as const
    }),
  findById: (organizationId, id) =>
    Effect.sync(() => Option.map(Option.fromNullable(owned(state.labels, organizationId, id)), (row) => labelOf(state, row))),
  findByNames: (organizationId, names) =>
    Effect.sync(() => rowsByNames(state.labels, organizationId, names).map((row) => labelOf(state, row))),
  list: (organizationId, request) =>
    Effect.sync(() => {
      const page = pageOf(state.labels.values(), organizationId, request)
      return { items: page.items.map((row) => labelOf(state, row)), total: page.total }
    }),
  deleteMany: (organizationId, ids) =>
    Effect.sync(() => {
      const deleted: Array<LabelId> = []
      for (const id of new Set(ids)) {
        if (owned(state.labels, organizationId, id) === undefined) continue
        state.labels.delete(id)
        state.labelledContacts.delete(id)
        deleted.push(id)
      }
      return deleted
    }),
  assign: (organizationId, id, contactIds) =>
    Effect.sync(() => {
      const label = owned(state.labels, organizationId, id)
      const missing: Array<ContactId> = []
      for (const contactId of new Set(contactIds)) {
        const contact = state.contacts.get(contactId)
        if (contact === undefined || contact.organization_id !== organizationId) missing.push(contactId)
      }
      if (label === undefined || missing.length > 0) {
        return { _tag: "NotFound", label: label === undefined, contacts: missing } as const
      }
      const carriers = state.labelledContacts.get(id) ?? new Set<ContactId>()
      for (const contactId of contactIds) carriers.add(contactId)
      state.labelledContacts.set(id, carriers)
      return { _tag: "Assigned" } as const
    })
})
