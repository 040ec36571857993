import Sqlite from "better-sqlite3"
import Pg from "pg"
import { describe, expect, it } from "vitest"
import { createOrganization, makeSharedStorage, openedPostgresSchemas, openedSqliteFiles } from "./helpers.js"

/**
 * The endpoint suites run on memory in `http-adapter`, on SQLite files in
 * `http-adapter-sqlite` and (a subset) on PostgreSQL schemas in `http-adapter-postgres`
 * (vitest.workspace.ts). This proves each project really runs on its store.
 */
describe("the store under test", () => {
  it("is the one SWITCHBOARD_TEST_STORAGE names", async () => {
    const { organization } = await createOrganization(makeSharedStorage())
    if (process.env.SWITCHBOARD_TEST_STORAGE === "sqlite") {
      expect(openedSqliteFiles).toHaveLength(1)
      const db = new Sqlite(openedSqliteFiles[0]!, { readonly: true })
      expect(db.prepare("SELECT name FROM organizations WHERE id = ?").get(organization.id)).toEqual({
        name: organization.name
      })
      db.close()
    } else if (process.env.SWITCHBOARD_TEST_STORAGE === "postgres") {
      expect(openedPostgresSchemas()).toHaveLength(1)
      const pool = new Pg.Pool({ connectionString: process.env.POSTGRES_URL, max: 1 })
      const found = await pool.query(`SELECT name FROM "${openedPostgresSchemas()[0]}".organizations WHERE id = $1`, [organization.id])
      await pool.end()
      expect(found.rows).toEqual([{ name: organization.name }])
    } else {
      expect(openedSqliteFiles).toEqual([])
      expect(openedPostgresSchemas()).toEqual([])
    }
  })
})
