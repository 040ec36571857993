import { markContactMediaDeleted } from "./media.js"
import { Effect, Option } from "effect"
import { CONTACT_DETAIL_FIELDS, type Contact, type ContactId, type ContactImportResult } from "../model/contacts.js"
import type { GroupId } from "../model/groups.js"
import type { LabelId } from "../model/labels.js"
import type { OrganizationId } from "../model/organizations.js"
import { findByName, labelOf } from "./groupsAndLabels.js"
import { byName, pageOf, phoneKey, type ContactRow, type MemoryState } from "./state.js"
import { recordWebhookEvent } from "./webhooks.js"
import { nameKey } from "../model/names.js"
import type { ContactImportRequest, ContactRepository } from "../storage/ContactRepository.js"

/** The contact record of a stored row, with its groups and labels by name. */
export const contactOf = (state: MemoryState, row: ContactRow): Contact => {
  const groups = []
  for (const [groupId, members] of state.groupMembers) {
    const group = state.groups.get(groupId)
    if (group !== undefined && members.has(row.uuid)) groups.push({ uuid: group.uuid, name: group.name })
  }
  const labels = []
  for (const [labelId, carriers] of state.labelledContacts) {
    const label = state.labels.get(labelId)
    if (label !== undefined && carriers.has(row.uuid)) labels.push({ uuid: label.uuid, name: label.name, color: label.color })
  }
  return { ...withoutOrganization(row), groups: byName(groups), labels: byName(labels) }
}

const withoutOrganization = ({ organization_id: _, ...rest }: ContactRow) => rest

const ownedContact = (state: MemoryState, organizationId: OrganizationId, id: ContactId) => {
  const row = state.contacts.get(id)
  return row !== undefined && row.organization_id === organizationId ? row : undefined
}

const emptyDetails = Object.fromEntries(CONTACT_DETAIL_FIELDS.map((field) => [field, null]))

/** The contacts repository of the memory store. */
export const contactRepository = (state: MemoryState): ContactRepository => ({
  importBulk: (organizationId, request) => Effect.sync(() => importBulk(state, organizationId, request)),
  list: (organizationId, request) =>
    Effect.sync(() => {
      const page = pageOf(state.contacts.values(), organizationId, request)
      return { items: page.items.map((row) => contactOf(state, row)), total: page.total }
    }),
  findById: (organizationId, id) =>
    Effect.sync(() => Option.map(Option.fromNullable(ownedContact(state, organizationId, id)), (row) => contactOf(state, row))),
  findByPhone: (organizationId, phone) =>
    Effect.sync(() => {
      const id = state.contactIdsByPhone.get(phoneKey(organizationId, phone))
      const row = id === undefined ? undefined : ownedContact(state, organizationId, id)
      return Option.map(Option.fromNullable(row), (found) => contactOf(state, found))
    }),
  update: (organizationId, id, patch, now) =>
    Effect.sync(() => {
      const row = ownedContact(state, organizationId, id)
      if (row === undefined) return { _tag: "NotFound" } as const
      const phone = patch.phone ?? row.phone
      const holder = state.contactIdsByPhone.get(phoneKey(organizationId, phone))
      if (holder !== undefined && holder !== id) return { _tag: "PhoneTaken" } as const
      const phone_valid = patch.phone === undefined ? row.phone_valid : true
      const optOut = patch.marketing_opt_out_at === null ? { marketing_opt_out_at: null } : {}
      const updated: ContactRow = { ...row, ...patch.details, ...optOut, phone, phone_valid, updated_at: now }
      state.contactIdsByPhone.delete(phoneKey(organizationId, row.phone))
      state.contactIdsByPhone.set(phoneKey(organizationId, phone), id)
      state.contacts.set(id, updated)
      return { _tag: "Updated", contact: contactOf(state, updated) } as const
    }),
  markMarketingOptOut: (organizationId, id, at) =>
    Effect.sync(() => {
      const row = ownedContact(state, organizationId, id)
      if (row === undefined || row.marketing_opt_out_at !== null) return false
      state.contacts.set(id, { ...row, marketing_opt_out_at: at })
      return true
    }),
  delete: (organizationId, id) =>
    Effect.sync(() => {
      const row = ownedContact(state, organizationId, id)
      if (row === undefined) return false
      state.contacts.delete(id)
      state.contactIdsByPhone.delete(phoneKey(organizationId, row.phone))
      for (const members of state.groupMembers.values()) members.delete(id)
      for (const carriers of state.labelledContacts.values()) carriers.delete(id)
      markContactMediaDeleted(state, organizationId, id)
      return true
    }),
  labelsOf: (organizationId, id) =>
    Effect.sync(() => {
      if (ownedContact(state, organizationId, id) === undefined) return Option.none()
      const labels = []
      for (const [labelId, carriers] of state.labelledContacts) {
        const label = state.labels.get(labelId as LabelId)
        if (label !== undefined && carriers.has(id)) labels.push(labelOf(state, label))
      }
      return Option.some(byName(labels))
    })
})

/** Checks everything first, then writes: nothing is written unless all of it can be. */
const importBulk = (state: MemoryState, organizationId: OrganizationId, request: ContactImportRequest) => {
  const missingGroups = new Set<GroupId>()
  let created = 0
  for (const row of request.rows) {
    if (!state.contactIdsByPhone.has(phoneKey(organizationId, row.phone))) created++
    for (const reference of row.groups) {
      if (reference._tag !== "ById") continue
      const group = state.groups.get(reference.uuid)
      if (group === undefined || group.organization_id !== organizationId) missingGroups.add(reference.uuid)
    }
  }
  if (missingGroups.size > 0) return { _tag: "GroupsNotFound", uuids: [...missingGroups] } as const
  if (request.contactsLimit !== null) {
    let usage = 0
    for (const row of state.contacts.values()) if (row.organization_id === organizationId) usage++
    if (created > 0 && usage + created > request.contactsLimit) {
      return { _tag: "LimitExceeded", limit: request.contactsLimit, usage, requested: created } as const
    }
  }
  const ids = request.ids[Symbol.iterator]()
  const nextId = () => {
    const next = ids.next()
    if (next.done === true) throw new Error("importBulk: not enough ids")
    return next.value
  }
  // New contacts take the first ids, in row order; new groups the ones after.
  const existingIds = request.rows.map((row) => state.contactIdsByPhone.get(phoneKey(organizationId, row.phone)))
  const rowIds = existingIds.map((existing) => existing ?? (nextId() as ContactId))
  const contacts: Array<ContactImportResult["contacts"][number]> = []
  request.rows.forEach((row, index) => {
    const uuid = rowIds[index] as ContactId
    const existing = existingIds[index] === undefined ? undefined : state.contacts.get(uuid)
    const base = existing ?? { ...emptyDetails, organization_id: organizationId, uuid, phone: row.phone, phone_valid: row.phone_valid ?? true, marketing_opt_out_at: null, created_at: request.now }
    state.contacts.set(uuid, { ...(base as ContactRow), ...row.details, updated_at: request.now })
    state.contactIdsByPhone.set(phoneKey(organizationId, row.phone), uuid)
    for (const reference of row.groups) {
      const groupId = reference._tag === "ById" ? reference.uuid : groupByName(state, organizationId, reference.name, nextId, request.now)
      const members = state.groupMembers.get(groupId) ?? new Set<ContactId>()
      members.add(uuid)
      state.groupMembers.set(groupId, members)
    }
    contacts.push({ uuid, phone: row.phone, status: existing === undefined ? "created" : "updated" })
  })
  if (request.events !== false) {
    for (const contact of contacts) {
      if (contact.status !== "created") continue
      recordWebhookEvent(state, organizationId, "contact.created", request.now, () => contactOf(state, state.contacts.get(contact.uuid)!))
    }
  }
  const result: ContactImportResult = { created, updated: contacts.length - created, contacts }
  return { _tag: "Imported", result } as const
}

const groupByName = (state: MemoryState, organizationId: OrganizationId, name: string, nextId: () => string, now: string) => {
  const found = findByName(state.groups, organizationId, nameKey(name))
  if (found !== undefined) return found.uuid
  const uuid = nextId() as GroupId
  state.groups.set(uuid, { organization_id: organizationId, uuid, name: name.trim(), name_key: nameKey(name), color: "", created_at: now, updated_at: now })
  return uuid
}
