import { Option } from "effect"
import type {
  Broadcast,
  BroadcastAudience,
  BroadcastCancelOutcome,
  BroadcastCounts,
  BroadcastId,
  BroadcastRecipient,
  BroadcastRecipientWrite,
  BroadcastRepository,
  BroadcastStatus,
  ContactId,
  MessageFailure,
  MessageId,
  MessageStatus,
  OrganizationId
} from "@switchboard/core"
import { attempt, type RepositoryFactory, snapshot, type Statements, transaction } from "../internal/sql.js"
import { writeAppendedMessage } from "./chats.js"
import { failQueuedBroadcastMessages } from "./outbox.js"
import { CONTACT_COLUMNS, type ContactRow, jsonArray, withRelations } from "./rows.js"
import { recordWebhookEvent } from "./webhooks.js"

/**
 * Migration 18: broadcasts and the contacts' marketing opt-out (docs/broadcasts.md).
 * - `contacts.marketing_opt_out_at`: when the contact's number refused marketing messages
 *   (Meta's 131050), else `NULL`; every existing contact `NULL`.
 * - `broadcasts`: the record without its counts (`template`, `audience` and
 *   `stopped_reason` as JSON text) and the state of its START (core's BroadcastRepository
 *   "THE START"): `start_cursor` (the uuid of the last contact a batch reached),
 *   `start_finished` (0/1), the starter's lease `start_lease` and its end
 *   `start_lease_until` (epoch ms). `broadcasts_newest` serves the list's keyset pages;
 *   `broadcasts_scheduled` (partial on `scheduled`) the due scheduled ones of a claim;
 *   `broadcasts_sending` (partial on `sending`) the starts to resume of a claim
 *   (`start_finished = 0`) and the finished ones `completeFinished` checks
 *   (`start_finished = 1`). No foreign key to `channels`: the channel may go, the record stays.
 * - A broadcast's RECIPIENTS are rows of `messages` with `broadcast_uuid` set (migration
 *   15's column): `messages_broadcast_recipients` (broadcast_uuid, contact_uuid), UNIQUE,
 *   holds the one-message-per-contact rule and serves the recipients list in contact-uuid
 *   order; `messages_broadcast_statuses` (broadcast_uuid, status, contact_uuid) serves the
 *   counts (one GROUP BY over a range, the index covers it), a list filtered by status and
 *   the queued recipients a cancel fails. Both are partial on `broadcast_uuid IS NOT NULL`,
 *   so single sends never enter them. A deleted contact's chat and messages go with it
 *   (migration 4), its recipient among them: counts are read from the messages present.
 */
export const BROADCASTS_MIGRATION = `
  ALTER TABLE contacts ADD COLUMN marketing_opt_out_at TEXT;

  CREATE TABLE broadcasts (
    uuid TEXT PRIMARY KEY NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    name TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('scheduled', 'sending', 'completed', 'cancelled', 'stopped')),
    template TEXT NOT NULL CHECK (json_valid(template)),
    audience TEXT NOT NULL CHECK (json_valid(audience)),
    channel_uuid TEXT,
    send_at TEXT,
    created_at TEXT NOT NULL,
    started_at TEXT,
    completed_at TEXT,
    stopped_reason TEXT CHECK (stopped_reason IS NULL OR json_valid(stopped_reason)),
    start_cursor TEXT,
    start_finished INTEGER NOT NULL DEFAULT 0 CHECK (start_finished IN (0, 1)),
    start_lease TEXT,
    start_lease_until INTEGER
  ) STRICT;
  CREATE INDEX broadcasts_newest ON broadcasts (organization_id, created_at DESC, uuid DESC);
  CREATE INDEX broadcasts_scheduled ON broadcasts (send_at) WHERE status = 'scheduled';
  CREATE INDEX broadcasts_sending ON broadcasts (start_finished, start_lease_until) WHERE status = 'sending';

  CREATE UNIQUE INDEX messages_broadcast_recipients ON messages (broadcast_uuid, contact_uuid)
    WHERE broadcast_uuid IS NOT NULL;
  CREATE INDEX messages_broadcast_statuses ON messages (broadcast_uuid, status, contact_uuid)
    WHERE broadcast_uuid IS NOT NULL;
`

/** A row of `broadcasts`; JSON columns as text, `start_finished` 0 or 1, `start_lease_until` epoch ms. */
interface BroadcastRow {
  readonly organization_id: string
  readonly uuid: string
  readonly name: string
  readonly status: string
  readonly template: string
  readonly audience: string
  readonly channel_uuid: string | null
  readonly send_at: string | null
  readonly created_at: string
  readonly started_at: string | null
  readonly completed_at: string | null
  readonly stopped_reason: string | null
  readonly start_cursor: string | null
  readonly start_finished: number
  readonly start_lease: string | null
  readonly start_lease_until: number | null
}

/** The columns of a {@link BroadcastRow}, in `SELECT` order. */
const BROADCAST_COLUMNS =
  "organization_id, uuid, name, status, template, audience, channel_uuid, send_at, created_at, started_at, " +
  "completed_at, stopped_reason, start_cursor, start_finished, start_lease, start_lease_until"

/** A recipient as the recipients list reads it: its message's columns and the phone it went to. */
interface RecipientRow {
  readonly contact_uuid: string
  readonly phone: string
  readonly message_uuid: string
  readonly status: string
  readonly failure: string | null
}

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

const ZERO_COUNTS: BroadcastCounts = { total: 0, queued: 0, sending: 0, sent: 0, delivered: 0, read: 0, failed: 0 }

/**
 * The counts of these broadcasts (keyed by uuid; one with no recipient is absent), read
 * from their recipients' current statuses in one query.
 */
const countsOf = (statements: Statements, ids: ReadonlyArray<string>): Map<string, BroadcastCounts> => {
  const byBroadcast = new Map<string, { -readonly [K in keyof BroadcastCounts]: number }>()
  if (ids.length === 0) return byBroadcast
  const rows = statements
    .prepare<{ broadcast_uuid: string; status: MessageStatus; count: number }>(SQL.counts)
    .all(jsonArray(ids))
  for (const row of rows) {
    let counts = byBroadcast.get(row.broadcast_uuid)
    if (counts === undefined) {
      counts = { ...ZERO_COUNTS }
      byBroadcast.set(row.broadcast_uuid, counts)
    }
    counts[row.status] += row.count
    counts.total += row.count
  }
  return byBroadcast
}

const parsedOrNull = <A>(text: string | null): A | null => (text === null ? null : (JSON.parse(text) as A))

/** A broadcast record from its row and its counts. */
const decodeBroadcast = (row: BroadcastRow, counts: BroadcastCounts): Broadcast => ({
  uuid: row.uuid as BroadcastId,
  name: row.name,
  status: row.status as BroadcastStatus,
  template: JSON.parse(row.template),
  audience: JSON.parse(row.audience),
  channel_uuid: row.channel_uuid as Broadcast["channel_uuid"],
  send_at: row.send_at,
  created_at: row.created_at,
  started_at: row.started_at,
  completed_at: row.completed_at,
  stopped_reason: parsedOrNull<MessageFailure>(row.stopped_reason),
  counts
})

/** The records of these rows, in their order, with their counts (one query for all). */
const recordsOf = (statements: Statements, rows: ReadonlyArray<BroadcastRow>): Array<Broadcast> => {
  const counts = countsOf(statements, rows.map((row) => row.uuid))
  return rows.map((row) => decodeBroadcast(row, counts.get(row.uuid) ?? ZERO_COUNTS))
}

/** The record of one row, with its counts. */
const recordOf = (statements: Statements, row: BroadcastRow): Broadcast => recordsOf(statements, [row])[0]!

/** A recipient record from its row. */
const decodeRecipient = (row: RecipientRow): BroadcastRecipient => ({
  contact_uuid: row.contact_uuid as ContactId,
  phone: row.phone,
  message_uuid: row.message_uuid as MessageId,
  status: row.status as MessageStatus,
  failure: parsedOrNull<MessageFailure>(row.failure)
})

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
const audiencePage = (
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
    const candidates = new Set<string>()
    for (const group of groups) for (const id of members.all(group, position, needed)) candidates.add(id)
    for (const label of labels) for (const id of carriers.all(label, position, needed)) candidates.add(id)
    let taken = 0
    for (const id of listed) {
      if (taken >= needed) break
      if (id > position) {
        candidates.add(id)
        taken += 1
      }
    }
    const first = [...candidates].sort().slice(0, needed)
    if (first.length === 0) break
    found.push(...statements.prepare<ContactRow>(SQL.contactsAmong).all(jsonArray(first), organizationId))
    if (first.length < needed) break
    position = first[first.length - 1]!
  }
  return found
}

/** The body of `claimStart`, inside its transaction: the first start due, leased; `undefined` when none is. */
const claimStart = (
  statements: Statements,
  request: { readonly now: number; readonly lease: string; readonly leaseUntil: number }
) => {
  const nowIso = new Date(request.now).toISOString()
  const due =
    statements.prepare<BroadcastRow>(SQL.resumable).get(request.now) ??
    statements.prepare<BroadcastRow>(SQL.dueScheduled).get(nowIso)
  if (due === undefined) return undefined
  const claimed = statements
    .prepare<BroadcastRow>(SQL.claim)
    .get(nowIso, request.lease, request.leaseUntil, due.uuid)!
  return {
    organization_id: claimed.organization_id as OrganizationId,
    broadcast: recordOf(statements, claimed),
    lease: request.lease,
    cursor: due.start_cursor as ContactId | null
  }
}

/**
 * Appends one recipient to its contact's chat through `chats.appendMessage`'s own writes
 * (chats.ts `writeAppendedMessage`): the chat created `open` as `chat_uuid` when missing,
 * its status and unread count unchanged; a `queued` message enters the send queue as class
 * `broadcast`, due at once (no claim), a `failed` one is written without dispatch state.
 * The message's `broadcast_uuid` is the broadcast's. Nothing when the contact is gone or
 * already has a message of this broadcast.
 */
const writeRecipient = (
  statements: Statements,
  organizationId: OrganizationId,
  broadcastId: string,
  recipient: BroadcastRecipientWrite,
  now: string
): void => {
  if (statements.prepare(SQL.hasRecipient).get(broadcastId, recipient.contact_uuid) !== undefined) return
  const message = { ...recipient.message, broadcast_uuid: broadcastId }
  writeAppendedMessage(statements, organizationId, {
    contact: { _tag: "ById", uuid: recipient.contact_uuid },
    newChat: { uuid: recipient.chat_uuid, status: "open" },
    message,
    unreadIncrement: 0,
    reopen: { from: [], to: "open" },
    dedupe: false,
    now,
    ...(message.status === "queued"
      ? { outbox: { to: recipient.to, class: "broadcast", expires_at: recipient.expires_at, claim: null } }
      : {})
  })
}

/**
 * Ends a `scheduled` or `sending` broadcast of the organization as `status`, inside the
 * caller's transaction: `completed_at` = `now`, `stopped_reason` = `failure` when
 * `stopped`, its start lease ended, its `queued` recipients failed with `failure` (an
 * event each). `NotFound` or `Refused` (it already ended) write nothing.
 */
const end = (
  statements: Statements,
  organizationId: OrganizationId,
  id: BroadcastId,
  status: "cancelled" | "stopped",
  failure: MessageFailure,
  now: string
): BroadcastCancelOutcome => {
  const row = statements.prepare<BroadcastRow>(SQL.find).get(organizationId, id)
  if (row === undefined) return { _tag: "NotFound" }
  if (row.status !== "scheduled" && row.status !== "sending") return { _tag: "Refused", broadcast: recordOf(statements, row) }
  const ended = statements
    .prepare<BroadcastRow>(SQL.end)
    .get(status, now, status === "stopped" ? JSON.stringify(failure) : null, id)!
  failQueuedBroadcastMessages(statements, organizationId, id, failure, now)
  return { _tag: "Done", broadcast: recordOf(statements, ended) }
}

/**
 * `Storage.broadcasts` on SQLite: table `broadcasts`, the recipients as rows of `messages`
 * with `broadcast_uuid` set (migration 18, {@link BROADCASTS_MIGRATION}). A recipient is
 * written by `chats.appendMessage`'s own writes (chats.ts `writeAppendedMessage`, the send
 * queue's placement in outbox.ts), so it is a chat message like any single send.
 * `claimStart`, `writeRecipients` (a whole batch), `cancel`, `stop` and `completeFinished`
 * are each one `BEGIN IMMEDIATE` transaction, so of several connections or processes on
 * one file one claimant holds a start and a batch is written only under its lease; events
 * (`message.status_updated` of the recipients a cancel or stop fails, `broadcast.completed`)
 * are written in those transactions (webhooks.ts). `claimStart` and `completeFinished`
 * first look with plain reads, so an idle starter takes no write lock. Counts are computed
 * at every read from the recipients' statuses (one GROUP BY for a whole page of records).
 *
 * @category repositories
 */
export const broadcastRepository: RepositoryFactory<BroadcastRepository> = (db, statements) => ({
  create: (organizationId, broadcast) =>
    attempt("broadcasts.create", () => {
      const row: BroadcastRow = {
        organization_id: organizationId,
        uuid: broadcast.uuid,
        name: broadcast.name,
        status: broadcast.status,
        template: JSON.stringify(broadcast.template),
        audience: JSON.stringify(broadcast.audience),
        channel_uuid: broadcast.channel_uuid,
        send_at: broadcast.send_at,
        created_at: broadcast.now,
        started_at: broadcast.status === "sending" ? broadcast.now : null,
        completed_at: null,
        stopped_reason: null,
        start_cursor: null,
        start_finished: 0,
        start_lease: null,
        start_lease_until: null
      }
      statements.prepare(SQL.insert).run(row)
      return decodeBroadcast(row, ZERO_COUNTS)
    }),
  findById: (organizationId, id) =>
    attempt("broadcasts.findById", () =>
      snapshot(db, () => {
        const row = statements.prepare<BroadcastRow>(SQL.find).get(organizationId, id)
        return row === undefined ? Option.none() : Option.some(recordOf(statements, row))
      })
    ),
  list: (organizationId, { limit, after }) =>
    attempt("broadcasts.list", () =>
      snapshot(db, () =>
        recordsOf(
          statements,
          after === null
            ? statements.prepare<BroadcastRow>(SQL.listFirst).all(organizationId, limit)
            : statements.prepare<BroadcastRow>(SQL.listAfter).all(organizationId, after.created_at, after.uuid, limit)
        )
      )
    ),
  recipients: (organizationId, id, { status, limit, after }) =>
    attempt("broadcasts.recipients", () =>
      snapshot(db, () => {
        if (statements.prepare(SQL.find).get(organizationId, id) === undefined) return []
        const rows =
          status === null
            ? statements.prepare<RecipientRow>(SQL.recipients).all(id, after ?? "", limit)
            : statements.prepare<RecipientRow>(SQL.recipientsWithStatus).all(id, status, after ?? "", limit)
        return rows.map(decodeRecipient)
      })
    ),
  countAudience: (organizationId, audience) =>
    attempt("broadcasts.countAudience", () =>
      statements.prepare<{ count: number }>(SQL.countAudience).get({
        organization: organizationId,
        groups: jsonArray(audience.group_uuids),
        labels: jsonArray(audience.label_uuids),
        contacts: jsonArray(audience.contact_uuids)
      })!.count
    ),
  audiencePage: (organizationId, audience, after, limit) =>
    attempt("broadcasts.audiencePage", () =>
      snapshot(db, () => withRelations(statements, audiencePage(statements, organizationId, audience, after, limit)))
    ),
  claimStart: (request) =>
    attempt("broadcasts.claimStart", () => {
      const anyDue = snapshot(
        db,
        () =>
          statements.prepare(SQL.resumable).get(request.now) !== undefined ||
          statements.prepare(SQL.dueScheduled).get(new Date(request.now).toISOString()) !== undefined
      )
      return anyDue ? Option.fromNullable(transaction(db, () => claimStart(statements, request))) : Option.none()
    }),
  writeRecipients: (organizationId, id, lease, batch) =>
    attempt("broadcasts.writeRecipients", () =>
      transaction(db, () => {
        const row = statements.prepare<BroadcastRow>(SQL.find).get(organizationId, id)
        if (row === undefined || row.status !== "sending" || row.start_lease !== lease) return false
        for (const recipient of batch.recipients) writeRecipient(statements, organizationId, id, recipient, batch.now)
        statements
          .prepare(SQL.storeStart)
          .run(
            batch.cursor,
            batch.finished ? 1 : 0,
            batch.finished ? null : lease,
            batch.finished ? null : batch.leaseUntil,
            id
          )
        return true
      })
    ),
  cancel: (organizationId, id, failure, now) =>
    attempt("broadcasts.cancel", () => transaction(db, () => end(statements, organizationId, id, "cancelled", failure, now))),
  stop: (organizationId, id, reason, now) =>
    attempt("broadcasts.stop", () =>
      transaction(db, () => {
        const outcome = end(statements, organizationId, id, "stopped", reason, now)
        return outcome._tag === "Done" ? Option.some(outcome.broadcast) : Option.none()
      })
    ),
  completeFinished: (now) =>
    attempt("broadcasts.completeFinished", () => {
      const finished = snapshot(db, () => statements.prepare<string>(SQL.finished).pluck().all())
      if (finished.length === 0) return []
      return transaction(db, () =>
        finished.flatMap((id) => {
          const row = statements.prepare<BroadcastRow>(SQL.complete).get(now, id)
          if (row === undefined) return []
          const record = recordOf(statements, row)
          recordWebhookEvent(statements, row.organization_id as OrganizationId, "broadcast.completed", now, () => record)
          return [record]
        })
      )
    })
})
