/**
 * The generated files are what `npm run generate` writes from today's routes, and the
 * hand-written method table covers every operation exactly once (docs/client.md "Generated types").
 */
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { apiDocument, EXCLUDED_TAGS, generatedFiles } from "../scripts/generate.mjs"
import { METHODS, type OperationId, OPERATIONS } from "../src/index.js"

const committed = (name: string) => readFileSync(new URL(`../src/generated/${name}`, import.meta.url), "utf8")

describe("generated types", () => {
  it("equal what `npm run generate` produces from the routes' OpenAPI document (run it after changing a route)", async () => {
    const files = await generatedFiles(await apiDocument())
    expect(files["openapi.ts"]).toBe(committed("openapi.ts"))
    expect(files["operations.ts"]).toBe(committed("operations.ts"))
  }, 60_000)
})

describe("the method table", () => {
  it("has exactly one method for every operation of the document outside the tags Guide and Webhooks", async () => {
    const document = (await apiDocument()) as { paths: Record<string, Record<string, { operationId: string; tags: Array<string> }>> }
    const documented = Object.values(document.paths)
      .flatMap((methods) => Object.values(methods))
      .filter((operation) => !operation.tags.some((tag) => EXCLUDED_TAGS.includes(tag)))
      .map((operation) => operation.operationId)
      .sort()
    const inTable = Object.values(METHODS).flatMap((methods) => Object.values(methods).map((method) => method.operationId as string))
    expect(new Set(inTable).size, "an operation has two methods").toBe(inTable.length)
    expect([...inTable].sort()).toEqual(documented)
    expect(Object.keys(OPERATIONS).sort()).toEqual(documented)
  })

  it("names for every list method an items key its operation's pages carry, and pages every list the document pages", async () => {
    for (const methods of Object.values(METHODS)) {
      for (const method of Object.values(methods)) {
        const operation = OPERATIONS[method.operationId as OperationId]
        if ("items" in method) expect(operation.method, method.operationId).toBe("GET")
      }
    }
    const listed = Object.values(METHODS).flatMap((methods) => Object.values(methods)).filter((method) => "items" in method)
    const paged = Object.entries(OPERATIONS)
      .filter(([, operation]) => operation.method === "GET" && operation.query && operation.json)
      .map(([operationId]) => operationId)
    // Every GET with query parameters is a list, except the file content (a signed link's query).
    expect(paged.sort()).toEqual(listed.map((method) => method.operationId as string).filter((id) => OPERATIONS[id as keyof typeof OPERATIONS].query).sort())
  })
})
