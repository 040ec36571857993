import type { Broadcast, MessageStatus } from "@switchboard/core"
import { BROADCAST_COLUMNS, type BroadcastRow, countsByBroadcast, ZERO_COUNTS } from "@switchboard/storage-sql"
import { decoders } from "../dialect.js"
import type { Statements } from "../internal/sql.js"
import { CONTACT_COLUMNS, jsonArray } from "./rows.js"

// The statements of broadcasts and the reads of their records with their counts, on
// SQLite; the rows of `broadcasts` and of their recipients and their decoding are
// @switchboard/storage-sql's.

export { type BroadcastRow, type RecipientRow, ZERO_COUNTS } from "@switchboard/storage-sql"

/** The recipient columns of `messages AS m LEFT JOIN contacts AS c`: the phone is the send queue's `to`, else the contact's. */
const RECIPIENT_SELECT = `SELECT m.contact_uuid, COALESCE(m.recipient, c.phone) AS phone, m.uuid AS message_uuid,
    m.status, m.failure
  FROM messages AS m LEFT JOIN contacts AS c ON c.uuid = m.contact_uuid`

/** The statements of this repository (exported for the query-plan test). */
export const SQL = {
  // Bound by name from a BroadcastRow.
  insert: `INSERT INTO broadcasts (${BROADCAST_COLUMNS})
    VALUES (${BROADCAST_COLUMNS.split(", ").map((column) => `@${column}`).join(", ")})`,
  find: `SELECT ${BROADCAST_COLUMNS} FROM broadcasts WHERE organization_id = ? AND uuid = ?`,
  // Keyset pages of broadcasts_newest, newest first.
  listFirst: `SELECT ${BROADCAST_COLUMNS} FROM broadcasts WHERE organization_id = ?
    ORDER BY created_at DESC, uuid DESC LIMIT ?`,
  listAfter: `SELECT ${BROADCAST_COLUMNS} FROM broadcasts WHERE organization_id = ? AND (created_at, uuid) < (?, ?)
    ORDER BY created_at DESC, uuid DESC LIMIT ?`,
  // The organization's sending broadcasts: the partial index broadcasts_sending (every
  // sending broadcast, a handful), filtered by organization.
  sending: `SELECT ${BROADCAST_COLUMNS} FROM broadcasts WHERE status = 'sending' AND organization_id = ?
    ORDER BY created_at, uuid`,
  // The counts of several broadcasts at once: per broadcast one range of the covering
  // index messages_broadcast_statuses, grouped in its order.
  counts: `SELECT broadcast_uuid, status, COUNT(*) AS count FROM messages
    WHERE broadcast_uuid IN (SELECT value FROM json_each(?))
    GROUP BY broadcast_uuid, status`,
  // One range of messages_broadcast_recipients, in contact-uuid order after `?` ('' = from the first).
  recipients: `${RECIPIENT_SELECT}
    WHERE m.broadcast_uuid = ? AND m.contact_uuid > ? AND COALESCE(m.recipient, c.phone) IS NOT NULL
    ORDER BY m.contact_uuid LIMIT ?`,
  // One range of messages_broadcast_statuses.
  recipientsWithStatus: `${RECIPIENT_SELECT}
    WHERE m.broadcast_uuid = ? AND m.status = ? AND m.contact_uuid > ? AND COALESCE(m.recipient, c.phone) IS NOT NULL
    ORDER BY m.contact_uuid LIMIT ?`,
  // The audience's distinct contacts (bound by name: `@organization`; `@groups`, `@labels`
  // and `@contacts`, JSON arrays): the members of the organization's groups among
  // `@groups` and the carriers of its labels among `@labels` (each a range of a primary
  // key; they are contacts of the organization: every writer links only the organization's
  // own contacts, and a deleted contact's links cascade), and the listed uuids that are
  // contacts of the organization (one probe each). CROSS JOIN fixes the join order (list,
  // then group or label, then its links) and the unary `+` keeps the organization's indexes
  // out of the probes, whatever the statistics say: left free, the planner chose, depending
  // on them, to scan every membership of every organization, or the organization's contacts
  // for each listed uuid (test/broadcasts.test.ts checks the plan with ANALYZE statistics).
  countAudience: `SELECT COUNT(DISTINCT uuid) AS count FROM (
      SELECT m.contact_uuid AS uuid FROM json_each(@groups) AS j
        CROSS JOIN contact_groups AS g ON g.uuid = j.value AND +g.organization_id = @organization
        CROSS JOIN group_members AS m ON m.group_uuid = g.uuid
      UNION ALL
      SELECT cl.contact_uuid FROM json_each(@labels) AS j
        CROSS JOIN labels AS l ON l.uuid = j.value AND +l.organization_id = @organization
        CROSS JOIN contact_labels AS cl ON cl.label_uuid = l.uuid
      UNION ALL
      SELECT c.uuid FROM json_each(@contacts) AS j
        CROSS JOIN contacts AS c ON c.uuid = j.value AND +c.organization_id = @organization
    )`,
  // The listed uuids (a JSON array) that are groups, labels or contacts of the organization:
  // one probe of the uuid index each, driven by the list (CROSS JOIN and the unary `+`, as
  // in countAudience: left free, the planner scanned the organization's rows instead).
  // Contacts in the order of the list.
  groupsOfOrganization: `SELECT DISTINCT g.uuid FROM json_each(?) AS j
    CROSS JOIN contact_groups AS g ON g.uuid = j.value WHERE +g.organization_id = ?`,
  labelsOfOrganization: `SELECT DISTINCT l.uuid FROM json_each(?) AS j
    CROSS JOIN labels AS l ON l.uuid = j.value WHERE +l.organization_id = ?`,
  contactsAmong: `SELECT ${CONTACT_COLUMNS.split(", ").map((column) => `c.${column}`).join(", ")} FROM json_each(?) AS j
    CROSS JOIN contacts AS c ON c.uuid = j.value WHERE +c.organization_id = ? ORDER BY j.key`,
  // One range of a primary key (group_uuid, contact_uuid) / (label_uuid, contact_uuid).
  membersAfter: "SELECT contact_uuid FROM group_members WHERE group_uuid = ? AND contact_uuid > ? ORDER BY contact_uuid LIMIT ?",
  carriersAfter: "SELECT contact_uuid FROM contact_labels WHERE label_uuid = ? AND contact_uuid > ? ORDER BY contact_uuid LIMIT ?",
  // A start to resume (its lease free or ended), then a due scheduled broadcast: one range
  // of broadcasts_sending, then of broadcasts_scheduled.
  resumable: `SELECT ${BROADCAST_COLUMNS} FROM broadcasts
    WHERE status = 'sending' AND start_finished = 0 AND (start_lease_until IS NULL OR start_lease_until <= ?)
    ORDER BY start_lease_until LIMIT 1`,
  dueScheduled: `SELECT ${BROADCAST_COLUMNS} FROM broadcasts
    WHERE status = 'scheduled' AND send_at <= ? ORDER BY send_at LIMIT 1`,
  // nextStartDueAt: the first row of each of those two ranges, without their time bound:
  // the earliest scheduled send_at (ISO 8601 text, read as epoch ms by the caller) and the
  // earliest lease end of an unfinished start (NULLs sort first: a free lease answers 0).
  // Each column NULL when its range is empty.
  nextStartDue: `SELECT
      (SELECT send_at FROM broadcasts WHERE status = 'scheduled' AND send_at IS NOT NULL
        ORDER BY send_at LIMIT 1) AS send_at,
      (SELECT COALESCE(start_lease_until, 0) FROM broadcasts WHERE status = 'sending' AND start_finished = 0
        ORDER BY start_lease_until LIMIT 1) AS lease_until`,
  claim: `UPDATE broadcasts SET status = 'sending', started_at = COALESCE(started_at, ?), start_lease = ?, start_lease_until = ?
    WHERE uuid = ? RETURNING ${BROADCAST_COLUMNS}`,
  // The one-per-contact rule: one probe of messages_broadcast_recipients.
  hasRecipient: "SELECT 1 FROM messages WHERE broadcast_uuid = ? AND contact_uuid = ?",
  storeStart: `UPDATE broadcasts SET start_cursor = ?, start_finished = ?, start_lease = ?, start_lease_until = ?
    WHERE uuid = ?`,
  end: `UPDATE broadcasts SET status = ?, completed_at = ?, stopped_reason = ?, start_lease = NULL, start_lease_until = NULL
    WHERE uuid = ? RETURNING ${BROADCAST_COLUMNS}`,
  // The sending broadcasts whose start finished and none of whose recipients waits: a range
  // of broadcasts_sending, two probes of messages_broadcast_statuses each.
  finished: `SELECT b.uuid FROM broadcasts AS b
    WHERE b.status = 'sending' AND b.start_finished = 1
      AND NOT EXISTS (SELECT 1 FROM messages AS m WHERE m.broadcast_uuid = b.uuid AND m.status IN ('queued', 'sending'))`,
  complete: `UPDATE broadcasts AS b SET status = 'completed', completed_at = ?
    WHERE b.uuid = ? AND b.status = 'sending' AND b.start_finished = 1
      AND NOT EXISTS (SELECT 1 FROM messages AS m WHERE m.broadcast_uuid = b.uuid AND m.status IN ('queued', 'sending'))
    RETURNING ${BROADCAST_COLUMNS}`
} as const

/**
 * The counts of these broadcasts (keyed by uuid; one with no recipient is absent), read
 * from their recipients' current statuses in one query.
 */
const countsOf = (statements: Statements, ids: ReadonlyArray<string>) =>
  countsByBroadcast(
    ids.length === 0
      ? []
      : statements.prepare<{ broadcast_uuid: string; status: MessageStatus; count: number }>(SQL.counts).all(jsonArray(ids))
  )

/** The records of these rows, in their order, with their counts (one query for all). */
export const recordsOf = (statements: Statements, rows: ReadonlyArray<BroadcastRow>): Array<Broadcast> => {
  const counts = countsOf(statements, rows.map((row) => row.uuid))
  return rows.map((row) => decoders.broadcasts.broadcast(row, counts.get(row.uuid) ?? ZERO_COUNTS))
}

/** The record of one row, with its counts. */
export const recordOf = (statements: Statements, row: BroadcastRow): Broadcast => recordsOf(statements, [row])[0]!
