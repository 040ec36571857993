import { describe, expect, it } from "vitest"
import Sqlite from "better-sqlite3"
import { applyPending, migrations } from "../src/migrations.js"
import { SQL as REPLIES } from "../src/repositories/basicReplies.js"
import { SQL as TEMPLATES } from "../src/repositories/templates.js"

// Migration 3: every read of the templates and basic-replies repositories is answered from
// an index (organization + identity, organization + trigger_key, organization + newest
// first), never by scanning the table or sorting in a temporary B-tree.

/** The EXPLAIN QUERY PLAN details of `sql` on a fresh schema. */
const planOf = (sql: string, params: ReadonlyArray<unknown>): Array<string> => {
  const db = new Sqlite(":memory:")
  applyPending(db, migrations, "2026-01-01T00:00:00.000Z")
  try {
    return db
      .prepare<Array<unknown>, { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
      .all(...params)
      .map((row) => row.detail)
  } finally {
    db.close()
  }
}

const ORG = "00000000-0000-4000-8000-000000000001"
const ID = "00000000-0000-4000-8000-000000000002"

const cases: ReadonlyArray<readonly [string, string, ReadonlyArray<unknown>, RegExp]> = [
  ["templates.findById", TEMPLATES.findById, [ORG, ID], /USING INDEX sqlite_autoindex_templates_1 \(uuid=\?\)/],
  ["templates.findByIdentity", TEMPLATES.findByIdentity, [ORG, "order_update", "en_US"], /USING INDEX sqlite_autoindex_templates_2/],
  ["templates.page", TEMPLATES.page, [ORG, 20, 0], /USING INDEX templates_newest/],
  ["templates.count", TEMPLATES.count, [ORG], /USING (COVERING )?INDEX/],
  ["basicReplies.findByTrigger", REPLIES.findByTrigger, [ORG, "hours"], /USING INDEX sqlite_autoindex_basic_replies_2/],
  ["basicReplies.page", REPLIES.page, [ORG, 20, 0], /USING INDEX basic_replies_newest/],
  ["basicReplies.count", REPLIES.count, [ORG], /USING (COVERING )?INDEX/]
]

describe("query plans of migration 3", () => {
  for (const [name, sql, params, expected] of cases) {
    it(`${name} uses an index, with no scan and no temporary sort`, () => {
      const plan = planOf(sql, params)
      expect(plan.join("\n"), name).toMatch(expected)
      for (const step of plan) expect(step, name).toMatch(/^SEARCH (templates|basic_replies) USING (COVERING )?INDEX /)
    })
  }
})
