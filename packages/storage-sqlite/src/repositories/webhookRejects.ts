import type { OrganizationId, WebhookReject, WebhookRejectRepository } from "@switchboard/core"
import { attempt, type RepositoryFactory, transaction } from "../internal/sql.js"

/**
 * `Storage.webhookRejects` on SQLite: table `webhook_rejects` (migration 13), `item` as
 * JSON text. `insert` is one transaction; `list` reads newest first through the
 * `(received_at, id)` index (or `(organization_id, received_at, id)` with an organization);
 * `prune` deletes through the first.
 *
 * @category repositories
 */
export const webhookRejectRepository: RepositoryFactory<WebhookRejectRepository> = (db, statements) => ({
  insert: (rejects) =>
    attempt("webhookRejects.insert", () =>
      transaction(db, () => {
        const insert = statements.prepare(SQL.insert)
        for (const reject of rejects) {
          insert.run(reject.id, reject.received_at, reject.organization_id, reject.phone_number_id, reject.reason, JSON.stringify(reject.item ?? null))
        }
      })
    ),
  list: ({ organizationId, limit }) =>
    attempt("webhookRejects.list", () =>
      (organizationId === undefined
        ? statements.prepare<RejectRow>(SQL.list).all(limit)
        : statements.prepare<RejectRow>(SQL.listOfOrganization).all(organizationId, limit)
      ).map(decodeReject)
    ),
  prune: (before) => attempt("webhookRejects.prune", () => statements.prepare(SQL.prune).run(before).changes)
})

/** The table and its indexes (migration 13). */
export const WEBHOOK_REJECTS_MIGRATION = `
  CREATE TABLE webhook_rejects (
    id TEXT PRIMARY KEY NOT NULL,
    received_at TEXT NOT NULL,
    organization_id TEXT,
    phone_number_id TEXT,
    reason TEXT NOT NULL,
    item TEXT NOT NULL
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX webhook_rejects_newest ON webhook_rejects (received_at DESC, id DESC);
  CREATE INDEX webhook_rejects_of_organization ON webhook_rejects (organization_id, received_at DESC, id DESC);
`

interface RejectRow {
  readonly id: string
  readonly received_at: string
  readonly organization_id: string | null
  readonly phone_number_id: string | null
  readonly reason: string
  readonly item: string
}

const COLUMNS = "id, received_at, organization_id, phone_number_id, reason, item"

const SQL = {
  // An id already stored is the same part delivered again: the first is kept.
  insert: `INSERT INTO webhook_rejects (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
  list: `SELECT ${COLUMNS} FROM webhook_rejects ORDER BY received_at DESC, id DESC LIMIT ?`,
  listOfOrganization: `SELECT ${COLUMNS} FROM webhook_rejects WHERE organization_id = ? ORDER BY received_at DESC, id DESC LIMIT ?`,
  prune: "DELETE FROM webhook_rejects WHERE received_at < ?"
} as const

const decodeReject = (row: RejectRow): WebhookReject => ({
  id: row.id,
  received_at: row.received_at,
  organization_id: row.organization_id as OrganizationId | null,
  phone_number_id: row.phone_number_id,
  reason: row.reason,
  item: JSON.parse(row.item) as unknown
})
