import { readFileSync } from "node:fs"
import type { OrganizationId } from "@switchboard/core"
import { describe, expect, it } from "vitest"
import { postgresDialect } from "../../storage-postgres/src/dialect.js"
import { sqliteDialect } from "../../storage-sqlite/src/dialect.js"
import { chatListPlannerOf, type SqlDialect } from "../src/index.js"
import { COUNT_CASES, LIST_CASES, ORGANIZATION, SCHEMA } from "./goldens/cases.js"

// The shared chat-list planner through each adapter's dialect, held to the goldens: the SQL
// text and parameters the two planners produced before they were written once
// (goldens/cases.ts). A difference is a query plan changed: look at it, never rewrite the
// goldens to make this pass.

const organizationId = ORGANIZATION as OrganizationId

const capture = (dialect: SqlDialect) => {
  const planner = chatListPlannerOf(dialect)
  return {
    list: LIST_CASES.map((c) => ({ name: c.name, plan: planner.list(organizationId, c.filters, c.sort, c.window) })),
    count: COUNT_CASES.map((c) => ({ name: c.name, statement: planner.count(organizationId, c.filters) }))
  }
}

const golden = (name: string) => JSON.parse(readFileSync(new URL(`./goldens/chat-list.${name}.json`, import.meta.url), "utf8"))

describe("the chat-list planner", () => {
  for (const [name, dialect] of [
    ["sqlite", sqliteDialect],
    ["postgres", postgresDialect(SCHEMA)]
  ] as const) {
    it(`produces the ${name} goldens exactly`, () => {
      const actual = JSON.parse(JSON.stringify(capture(dialect)))
      expect(actual.list.length).toBeGreaterThanOrEqual(40)
      expect(actual).toEqual(golden(name))
    })
  }
})
