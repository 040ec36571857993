import { nextAudienceCandidates } from "@switchboard/storage-sql"
import type { BroadcastAudience, Contact, ContactId, OrganizationId } from "@switchboard/core"
import type { Sql } from "../internal/sql.js"
import { contactsByUuid } from "./rows.js"

// A broadcast's audience: the union of the members of its groups, the carriers of its
// labels and its listed contacts, each contact once, only the organization's.

/**
 * How many distinct contacts of the organization the audience holds: one statement, each
 * source driven by its list of uuids (a probe of the primary key per group, label or
 * contact, then a range of the memberships).
 */
export const countAudience = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId,
  audience: BroadcastAudience
): Promise<number> =>
  (await sql.row<{ count: number }>(
    `SELECT COUNT(DISTINCT a.uuid) AS count FROM (
        SELECT m.contact_uuid AS uuid FROM ${schema}.contact_groups AS g
          JOIN ${schema}.group_members AS m ON m.group_uuid = g.uuid
          WHERE g.uuid = ANY($2::text[]) AND g.organization_id = $1
        UNION ALL
        SELECT cl.contact_uuid FROM ${schema}.labels AS l
          JOIN ${schema}.contact_labels AS cl ON cl.label_uuid = l.uuid
          WHERE l.uuid = ANY($3::text[]) AND l.organization_id = $1
        UNION ALL
        SELECT c.uuid FROM ${schema}.contacts AS c WHERE c.uuid = ANY($4::text[]) AND c.organization_id = $1
      ) AS a`,
    [organizationId, [...audience.group_uuids], [...audience.label_uuids], [...audience.contact_uuids]]
  ))!.count

/**
 * Up to `limit` contacts of the audience (each once, existing contacts of the organization
 * only) with a uuid greater than `after` (`null`: from the first), in ascending uuid order
 * (`COLLATE "C"`, as JavaScript compares). Each source is read as a keyset range of at
 * most `limit` entries (a group's members and a label's carriers from their primary keys,
 * the listed uuids sorted here); the first `limit` of their sorted union are the first
 * `limit` of the whole union. Candidates that are no contact of the organization are
 * dropped and the read goes on after them. Run inside a snapshot.
 */
export const audiencePage = async (
  sql: Sql,
  schema: string,
  organizationId: OrganizationId,
  audience: BroadcastAudience,
  after: ContactId | null,
  limit: number
): Promise<Array<Contact>> => {
  const groups = (await sql.rows<{ uuid: string }>(
    `SELECT uuid FROM ${schema}.contact_groups WHERE uuid = ANY($1::text[]) AND organization_id = $2`,
    [[...audience.group_uuids], organizationId]
  )).map((row) => row.uuid)
  const labels = (await sql.rows<{ uuid: string }>(
    `SELECT uuid FROM ${schema}.labels WHERE uuid = ANY($1::text[]) AND organization_id = $2`,
    [[...audience.label_uuids], organizationId]
  )).map((row) => row.uuid)
  const listed = [...new Set(audience.contact_uuids)].sort()
  const found: Array<Contact> = []
  let position: string = after ?? ""
  while (found.length < limit) {
    const needed = limit - found.length
    // Per group and label a range of its primary key: (group_uuid, contact_uuid) > position.
    const linked = await sql.rows<{ uuid: string }>(
      `SELECT s.uuid FROM unnest($1::text[]) AS g (uuid)
          CROSS JOIN LATERAL (SELECT contact_uuid AS uuid FROM ${schema}.group_members
            WHERE group_uuid = g.uuid AND contact_uuid > $3 ORDER BY contact_uuid LIMIT $4) AS s
        UNION ALL
        SELECT s.uuid FROM unnest($2::text[]) AS l (uuid)
          CROSS JOIN LATERAL (SELECT contact_uuid AS uuid FROM ${schema}.contact_labels
            WHERE label_uuid = l.uuid AND contact_uuid > $3 ORDER BY contact_uuid LIMIT $4) AS s`,
      [groups, labels, position, needed]
    )
    const first = nextAudienceCandidates(linked.map((row) => row.uuid), listed, position, needed)
    if (first.length === 0) break
    found.push(...(await contactsByUuid(sql, schema, organizationId, first)))
    if (first.length < needed) break
    position = first[first.length - 1]!
  }
  return found
}
