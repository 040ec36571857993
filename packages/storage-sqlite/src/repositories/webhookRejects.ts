import type { WebhookRejectRepository } from "@switchboard/core"
import { REJECT_COLUMNS, type RejectRow } from "@switchboard/storage-sql"
import { decoders } from "../dialect.js"
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

const COLUMNS = REJECT_COLUMNS

const SQL = {
  // An id already stored is the same part delivered again: the first is kept.
  insert: `INSERT INTO webhook_rejects (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
  list: `SELECT ${COLUMNS} FROM webhook_rejects ORDER BY received_at DESC, id DESC LIMIT ?`,
  listOfOrganization: `SELECT ${COLUMNS} FROM webhook_rejects WHERE organization_id = ? ORDER BY received_at DESC, id DESC LIMIT ?`,
  prune: "DELETE FROM webhook_rejects WHERE received_at < ?"
} as const

const decodeReject = decoders.webhooks.reject
