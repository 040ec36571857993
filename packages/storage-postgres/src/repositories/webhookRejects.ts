import type { WebhookRejectRepository } from "@switchboard/core"
import { REJECT_COLUMNS, type RejectRow } from "@switchboard/storage-sql"
import { decoders } from "../dialect.js"
import { attempt, type RepositoryFactory } from "../internal/sql.js"

/**
 * `Storage.webhookRejects` on PostgreSQL: table `webhook_rejects` (schema/catalog.ts), `item`
 * a `json` column. `insert` is one statement for the whole batch (an id already stored is
 * the same part delivered again: the first is kept); `list` reads newest first through the
 * `(received_at, id)` index (or `(organization_id, received_at, id)` with an
 * organization); `prune` deletes through the first.
 *
 * @category repositories
 */
export const webhookRejectRepository: RepositoryFactory<WebhookRejectRepository> = (db) => {
  const SQL = statements(db.schema)
  return {
    insert: (rejects) =>
      attempt("webhookRejects.insert", async () => {
        if (rejects.length === 0) return
        await db.sql.run(SQL.insert, [
          rejects.map((reject) => reject.id),
          rejects.map((reject) => reject.received_at),
          rejects.map((reject) => reject.organization_id),
          rejects.map((reject) => reject.phone_number_id),
          rejects.map((reject) => reject.reason),
          rejects.map((reject) => JSON.stringify(reject.item ?? null))
        ])
      }),
    list: ({ organizationId, limit }) =>
      attempt("webhookRejects.list", async () =>
        (organizationId === undefined
          ? await db.sql.rows<RejectRow>(SQL.list, [limit])
          : await db.sql.rows<RejectRow>(SQL.listOfOrganization, [organizationId, limit])
        ).map(decodeReject)
      ),
    prune: (before) => attempt("webhookRejects.prune", () => db.sql.run(SQL.prune, [before]))
  }
}

const COLUMNS = REJECT_COLUMNS

/** The statements of this repository on `schema` (quoted). */
const statements = (schema: string) =>
  ({
    // One row per array element, in order; within one batch too, the first of an id is kept.
    insert: `INSERT INTO ${schema}.webhook_rejects (${COLUMNS})
      SELECT id, received_at, organization_id, phone_number_id, reason, item::json
      FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[])
        WITH ORDINALITY AS r (id, received_at, organization_id, phone_number_id, reason, item, position)
      ORDER BY position
      ON CONFLICT (id) DO NOTHING`,
    list: `SELECT ${COLUMNS} FROM ${schema}.webhook_rejects ORDER BY received_at DESC, id DESC LIMIT $1`,
    listOfOrganization: `SELECT ${COLUMNS} FROM ${schema}.webhook_rejects WHERE organization_id = $1
      ORDER BY received_at DESC, id DESC LIMIT $2`,
    prune: `DELETE FROM ${schema}.webhook_rejects WHERE received_at < $1`
  }) as const

const decodeReject = decoders.webhooks.reject
