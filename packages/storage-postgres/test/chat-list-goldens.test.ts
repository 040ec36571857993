import { readFileSync, writeFileSync } from "node:fs"
import type { OrganizationId } from "@switchboard/core"
import { describe, expect, it } from "vitest"
import { COUNT_CASES, LIST_CASES, ORGANIZATION, SCHEMA } from "../../storage-sql/test/goldens/cases.js"
import { planChatCount, planChatList } from "../src/repositories/chat-list.js"

// The SQL text and parameters of today's PostgreSQL planner, held to the committed goldens.
// `SWITCHBOARD_UPDATE_GOLDENS=1` writes them instead (only ever before the planner moves).

const file = new URL("../../storage-sql/test/goldens/chat-list.postgres.json", import.meta.url)
const organizationId = ORGANIZATION as OrganizationId

const capture = () => ({
  list: LIST_CASES.map((c) => ({ name: c.name, plan: planChatList(SCHEMA, organizationId, c.filters, c.sort, c.window) })),
  count: COUNT_CASES.map((c) => ({ name: c.name, statement: planChatCount(SCHEMA, organizationId, c.filters) }))
})

describe("the PostgreSQL chat-list planner", () => {
  it("produces the golden SQL and parameters", () => {
    const actual = JSON.parse(JSON.stringify(capture()))
    if (process.env.SWITCHBOARD_UPDATE_GOLDENS === "1") writeFileSync(file, JSON.stringify(actual, null, 2) + "\n")
    expect(actual).toEqual(JSON.parse(readFileSync(file, "utf8")))
  })
})
