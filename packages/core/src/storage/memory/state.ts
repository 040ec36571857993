import type { ContactDetails, ContactId } from "../../contacts/model.js"
import type { GroupId } from "../../groups/model.js"
import type { LabelId } from "../../labels/model.js"
import type { ApiKey, ApiKeyId, Organization, OrganizationId } from "../../organizations/model.js"
import type { Page, PageRequest } from "../../common/model.js"

/** A contact as the memory store keeps it: scalar fields only. */
export interface ContactRow extends ContactDetails {
  readonly organization_id: OrganizationId
  readonly uuid: ContactId
  readonly phone: string
  readonly phone_valid: boolean
  readonly created_at: string
  readonly updated_at: string
}

/** A group or label as the memory store keeps it (labels also have a color). */
export interface NamedRow<Id> {
  readonly organization_id: OrganizationId
  readonly uuid: Id
  readonly name: string
  readonly name_key: string
  readonly color: string
  readonly created_at: string
  readonly updated_at: string
}

/** Everything one memory store holds. Maps keep insertion order. */
export interface MemoryState {
  readonly organizations: Map<OrganizationId, Organization>
  readonly apiKeys: Map<ApiKeyId, ApiKey>
  readonly apiKeyIdsByHash: Map<string, ApiKeyId>
  readonly contacts: Map<ContactId, ContactRow>
  /** `organizationId + " " + phone` → contact uuid. */
  readonly contactIdsByPhone: Map<string, ContactId>
  readonly groups: Map<GroupId, NamedRow<GroupId>>
  readonly groupMembers: Map<GroupId, Set<ContactId>>
  readonly labels: Map<LabelId, NamedRow<LabelId>>
  readonly labelledContacts: Map<LabelId, Set<ContactId>>
}

export const makeState = (): MemoryState => ({
  organizations: new Map(),
  apiKeys: new Map(),
  apiKeyIdsByHash: new Map(),
  contacts: new Map(),
  contactIdsByPhone: new Map(),
  groups: new Map(),
  groupMembers: new Map(),
  labels: new Map(),
  labelledContacts: new Map()
})

/** The key of `contactIdsByPhone`. */
export const phoneKey = (organizationId: OrganizationId, phone: string): string => `${organizationId} ${phone}`

/** Rows of one organization, newest first (`created_at desc, uuid desc`), one page of them. */
export const pageOf = <Row extends { readonly organization_id: string; readonly created_at: string; readonly uuid: string }>(
  rows: Iterable<Row>,
  organizationId: OrganizationId,
  request: PageRequest
): Page<Row> => {
  const owned = [...rows].filter((row) => row.organization_id === organizationId).sort(newestFirst)
  const start = (request.page - 1) * request.per_page
  return { items: owned.slice(start, start + request.per_page), total: owned.length }
}

const newestFirst = (a: { created_at: string; uuid: string }, b: { created_at: string; uuid: string }): number =>
  a.created_at === b.created_at ? (a.uuid < b.uuid ? 1 : -1) : a.created_at < b.created_at ? 1 : -1

/** Sorts records by name, in place, and returns them. */
export const byName = <A extends { readonly name: string }>(records: Array<A>): Array<A> =>
  records.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
