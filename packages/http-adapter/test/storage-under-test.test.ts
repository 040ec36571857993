import Sqlite from "better-sqlite3"
import { describe, expect, it } from "vitest"
import { createOrganization, makeSharedStorage, openedSqliteFiles } from "./helpers.js"

/**
 * The endpoint suites run twice (vitest.workspace.ts): on memory in `http-adapter` and on
 * SQLite files in `http-adapter-sqlite`. This proves each project really runs on its store.
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
    } else {
      expect(openedSqliteFiles).toEqual([])
    }
  })
})
