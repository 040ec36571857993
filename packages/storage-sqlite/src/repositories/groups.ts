import { Option } from "effect"
import { type GroupRepository, type GroupWriteOutcome, nameKey } from "@switchboard/core"
import { attempt, type RepositoryFactory, snapshot, transaction } from "../internal/sql.js"
import { countOf, decodeGroup, GROUP_SELECT, type GroupRow, jsonArray, NEWEST_FIRST, pageBounds } from "./rows.js"

/**
 * `Storage.groups` on SQLite: table `contact_groups` (migration 2), names unique per
 * organization by `name_key` (core's `nameKey`, enforced by a UNIQUE index);
 * `contacts_count` is counted from `group_members`. `create` is one statement and `rename`
 * one `BEGIN IMMEDIATE` transaction, so neither can race another writer into a duplicate.
 *
 * @category repositories
 */
export const groupRepository: RepositoryFactory<GroupRepository> = (db, statements) => {
  /** The group as stored now, or `undefined`. */
  const find = (organizationId: string, id: string): GroupRow | undefined =>
    statements.prepare<GroupRow>(SQL.findById).get(organizationId, id)

  return {
    create: (organizationId, group) =>
      attempt("groups.create", (): GroupWriteOutcome => {
        const { changes } = statements
          .prepare(SQL.insert)
          .run(group.uuid, organizationId, group.name, nameKey(group.name), group.now, group.now)
        if (changes === 0) return { _tag: "NameTaken" }
        const created = { uuid: group.uuid, name: group.name, contacts_count: 0 }
        return { _tag: "Written", group: { ...created, created_at: group.now, updated_at: group.now } }
      }),
    rename: (organizationId, id, name, now) =>
      attempt("groups.rename", () =>
        transaction(db, (): GroupWriteOutcome => {
          if (find(organizationId, id) === undefined) return { _tag: "NotFound" }
          if (statements.prepare(SQL.nameOwner).get(organizationId, nameKey(name), id) !== undefined) {
            return { _tag: "NameTaken" }
          }
          statements.prepare(SQL.rename).run(name, nameKey(name), now, organizationId, id)
          return { _tag: "Written", group: decodeGroup(find(organizationId, id)!) }
        })
      ),
    findById: (organizationId, id) =>
      attempt("groups.findById", () => Option.map(Option.fromNullable(find(organizationId, id)), decodeGroup)),
    findByNames: (organizationId, names) =>
      attempt("groups.findByNames", () =>
        statements.prepare<GroupRow>(SQL.findByNames).all(organizationId, jsonArray(names.map(nameKey))).map(decodeGroup)
      ),
    list: (organizationId, page) =>
      attempt("groups.list", () =>
        snapshot(db, () => ({
          items: statements.prepare<GroupRow>(SQL.page).all(organizationId, ...pageBounds(page)).map(decodeGroup),
          total: countOf(statements, SQL.count, organizationId)
        }))
      )
  }
}

const SQL = {
  insert: `INSERT INTO contact_groups (uuid, organization_id, name, name_key, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (organization_id, name_key) DO NOTHING`,
  findById: `${GROUP_SELECT} WHERE g.organization_id = ? AND g.uuid = ?`,
  findByNames: `${GROUP_SELECT} WHERE g.organization_id = ? AND g.name_key IN (SELECT value FROM json_each(?))`,
  nameOwner: "SELECT uuid FROM contact_groups WHERE organization_id = ? AND name_key = ? AND uuid <> ?",
  rename: "UPDATE contact_groups SET name = ?, name_key = ?, updated_at = ? WHERE organization_id = ? AND uuid = ?",
  page: `${GROUP_SELECT} WHERE g.organization_id = ? ${NEWEST_FIRST}`,
  count: "SELECT COUNT(*) AS count FROM contact_groups WHERE organization_id = ?"
} as const
