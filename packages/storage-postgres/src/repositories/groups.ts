import { Option } from "effect"
import { type GroupRepository, type GroupWriteOutcome, nameKey } from "@switchboard/core"
import { attempt, pageBounds, type RepositoryFactory } from "../internal/sql.js"
import { countOf, decodeGroup, groupSelect, type GroupRow, newestFirst } from "./rows.js"

/**
 * `Storage.groups` on PostgreSQL: table `contact_groups` (src/schema/records.ts), names
 * unique per organization by `name_key` (core's `nameKey`, enforced by a UNIQUE index);
 * `contacts_count` is counted from `group_members`. `create` and `rename` each run in one
 * transaction holding the organization's lock (`lockOrganization`), as the imports that
 * create groups by name do, so no writer races another into a duplicate name; `create`'s
 * insert is `ON CONFLICT DO NOTHING` besides. A page and its total share one snapshot.
 *
 * @category repositories
 */
export const groupRepository: RepositoryFactory<GroupRepository> = (db) => {
  const SQL = statementsOf(db.schema)
  return {
    create: (organizationId, group) =>
      attempt("groups.create", () =>
        db.transaction(
          async (sql): Promise<GroupWriteOutcome> => {
            const inserted = await sql.run(SQL.insert, [group.uuid, organizationId, group.name, nameKey(group.name), group.now])
            if (inserted === 0) return { _tag: "NameTaken" }
            const created = { uuid: group.uuid, name: group.name, contacts_count: 0 }
            return { _tag: "Written", group: { ...created, created_at: group.now, updated_at: group.now } }
          },
          { lockOrganization: organizationId }
        )
      ),
    rename: (organizationId, id, name, now) =>
      attempt("groups.rename", () =>
        db.transaction(
          async (sql): Promise<GroupWriteOutcome> => {
            if ((await sql.row(SQL.exists, [organizationId, id])) === undefined) return { _tag: "NotFound" }
            if ((await sql.row(SQL.nameOwner, [organizationId, nameKey(name), id])) !== undefined) {
              return { _tag: "NameTaken" }
            }
            await sql.run(SQL.rename, [name, nameKey(name), now, organizationId, id])
            return { _tag: "Written", group: decodeGroup((await sql.row<GroupRow>(SQL.findById, [organizationId, id]))!) }
          },
          { lockOrganization: organizationId }
        )
      ),
    findById: (organizationId, id) =>
      attempt("groups.findById", async () =>
        Option.map(Option.fromNullable(await db.sql.row<GroupRow>(SQL.findById, [organizationId, id])), decodeGroup)
      ),
    findByNames: (organizationId, names) =>
      attempt("groups.findByNames", async () =>
        names.length === 0
          ? []
          : (await db.sql.rows<GroupRow>(SQL.findByNames, [organizationId, names.map(nameKey)])).map(decodeGroup)
      ),
    list: (organizationId, page) =>
      attempt("groups.list", () =>
        db.snapshot(async (sql) => ({
          items: (await sql.rows<GroupRow>(SQL.page, [organizationId, ...pageBounds(page)])).map(decodeGroup),
          total: await countOf(sql, SQL.count, [organizationId])
        }))
      )
  }
}

/** The statements of this repository on `schema`. */
const statementsOf = (schema: string) =>
  ({
    insert: `INSERT INTO ${schema}.contact_groups (uuid, organization_id, name, name_key, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (organization_id, name_key) DO NOTHING`,
    exists: `SELECT 1 AS found FROM ${schema}.contact_groups WHERE organization_id = $1 AND uuid = $2`,
    findById: `${groupSelect(schema)} WHERE g.organization_id = $1 AND g.uuid = $2`,
    findByNames: `${groupSelect(schema)} WHERE g.organization_id = $1 AND g.name_key = ANY($2::text[])`,
    nameOwner: `SELECT uuid FROM ${schema}.contact_groups WHERE organization_id = $1 AND name_key = $2 AND uuid <> $3`,
    rename: `UPDATE ${schema}.contact_groups SET name = $1, name_key = $2, updated_at = $3
      WHERE organization_id = $4 AND uuid = $5`,
    page: `${groupSelect(schema)} WHERE g.organization_id = $1 ${newestFirst(2)}`,
    count: `SELECT COUNT(*) AS count FROM ${schema}.contact_groups WHERE organization_id = $1`
  }) as const
