import type { BroadcastAudience, ContactId, OrganizationId } from "@switchboard/core"
import { nextAudienceCandidates } from "@switchboard/storage-sql"
import type { Statements } from "../internal/sql.js"
import { SQL } from "./broadcastRows.js"
import { type ContactRow, jsonArray } from "./rows.js"

// A broadcast's audience: the union of the members of its groups, the carriers of its
// labels and its listed contacts, each contact once, only the organization's.

/**
 * Up to `limit` contacts of the audience (each once, existing contacts of the organization
 * only) with a uuid greater than `after` (`null`: from the first), in ascending uuid order.
 * Each source is read as a keyset range of at most `limit` entries (a group's members and
 * a label's carriers from their primary keys, the listed uuids sorted here); the first
 * `limit` of their sorted union are the first `limit` of the whole union, since an entry
 * among those has fewer than `limit` entries before it in its own source. Candidates that
 * are no contact of the organization (a listed uuid) are dropped and the read goes on
 * after them, so a page costs about `limit` entries per source however large the
 * audience. Run inside a snapshot.
 */
export const audiencePage = (
  statements: Statements,
  organizationId: OrganizationId,
  audience: BroadcastAudience,
  after: ContactId | null,
  limit: number
): Array<ContactRow> => {
  const groups = statements.prepare<string>(SQL.groupsOfOrganization).pluck().all(jsonArray(audience.group_uuids), organizationId)
  const labels = statements.prepare<string>(SQL.labelsOfOrganization).pluck().all(jsonArray(audience.label_uuids), organizationId)
  const listed = [...new Set(audience.contact_uuids)].sort()
  const members = statements.prepare<string>(SQL.membersAfter).pluck()
  const carriers = statements.prepare<string>(SQL.carriersAfter).pluck()
  const found: Array<ContactRow> = []
  let position: string = after ?? ""
  while (found.length < limit) {
    const needed = limit - found.length
    const linked: Array<string> = []
    for (const group of groups) linked.push(...members.all(group, position, needed))
    for (const label of labels) linked.push(...carriers.all(label, position, needed))
    const first = nextAudienceCandidates(linked, listed, position, needed)
    if (first.length === 0) break
    found.push(...statements.prepare<ContactRow>(SQL.contactsAmong).all(jsonArray(first), organizationId))
    if (first.length < needed) break
    position = first[first.length - 1]!
  }
  return found
}
