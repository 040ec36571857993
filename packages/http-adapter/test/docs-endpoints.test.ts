/**
 * docs/http-api.md "Endpoints" lists every operation the API serves, and only those: the
 * operations of the OpenAPI document built from the default routes (what `GET
 * {base}/openapi.json` serves, docs/api-reference.md) against every backticked
 * `METHOD /path` in the first column of the page's endpoint table (a row may name several).
 * Parameter names are ignored (`/contacts/{uuid}` is `/contacts/{id}`); nothing is left
 * out on either side: the discovery routes and the WhatsApp webhook routes have rows too.
 * A failure names each operation without a row and each row without an operation.
 * The page's "Statuses" table names every HTTP status an error code of the API answers
 * with (`ERROR_CODE_STATUSES`, the codes docs/errors.md lists).
 */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { defaultRoutes, DEFAULT_BASE_PATH, ERROR_CODE_STATUSES, openApiDocument } from "@switchboard/http-adapter"

const page = fileURLToPath(new URL("../../../docs/http-api.md", import.meta.url))

/** `GET /contacts/{uuid}` → `GET /contacts/{}`: the method in capitals, parameter names dropped. */
const operationKey = (method: string, path: string) => `${method.toUpperCase()} ${path.replace(/\{[^}]*\}/g, "{}")}`

/** The table under `## Endpoints`: its rows' first cells (the header and its rule left out). */
const firstCellsOfEndpointTable = (markdown: string): Array<string> => {
  const start = markdown.indexOf("\n## Endpoints\n")
  if (start < 0) throw new Error('docs/http-api.md has no "## Endpoints" section')
  const next = markdown.indexOf("\n## ", start + 1)
  const section = markdown.slice(start, next < 0 ? undefined : next)
  const rows = section.split("\n").filter((line) => line.startsWith("|"))
  if (rows.length < 3) throw new Error('docs/http-api.md "Endpoints" has no table')
  // A cell ends at the first `|` outside backticks (none of the paths holds one).
  return rows.slice(2).map((row) => row.slice(1).split("|")[0]!)
}

/** Every backticked `METHOD /path` of a cell, as written. */
const operationsOfCell = (cell: string): Array<string> =>
  [...cell.matchAll(/`(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) (\/[^`\s]*)`/g)].map((match) => `${match[1]} ${match[2]}`)

/** The operations a page's table names, by key: as first written, and in how many rows. */
const documentedOperations = (markdown: string): Map<string, { readonly written: string; readonly rows: number }> => {
  const documented = new Map<string, { readonly written: string; readonly rows: number }>()
  for (const cell of firstCellsOfEndpointTable(markdown)) {
    for (const written of operationsOfCell(cell)) {
      const [method, path] = written.split(" ") as [string, string]
      const key = operationKey(method, path)
      documented.set(key, { written: documented.get(key)?.written ?? written, rows: (documented.get(key)?.rows ?? 0) + 1 })
    }
  }
  return documented
}

/** The operations of the OpenAPI document of the default routes, by key, as `METHOD /path`. */
const servedOperations = (): Map<string, string> => {
  const document = openApiDocument({ basePath: DEFAULT_BASE_PATH, routes: defaultRoutes })
  return new Map(
    Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => [operationKey(method, path), `${method.toUpperCase()} ${path}`] as const)
    )
  )
}

/** The differences between the table and the document, one line each. */
const differences = (markdown: string): Array<string> => {
  const documented = documentedOperations(markdown)
  const served = servedOperations()
  return [
    ...[...served].filter(([key]) => !documented.has(key)).map(([, operation]) => `no row for ${operation}`),
    ...[...documented].filter(([key]) => !served.has(key)).map(([, { written }]) => `a row for ${written}, which the API does not serve`),
    ...[...documented].filter(([, { rows }]) => rows > 1).map(([, { written, rows }]) => `${written} in ${rows} rows`)
  ].sort()
}

describe("docs/http-api.md, the endpoint table", () => {
  const markdown = readFileSync(page, "utf8")

  it("has one row for every operation of the OpenAPI document, and none for an operation it lacks", () => {
    expect(servedOperations().size).toBeGreaterThan(50)
    expect(differences(markdown), "docs/http-api.md \"Endpoints\" against openApiDocument(defaultRoutes)").toEqual([])
  })

  it("reads several operations per row, ignores parameter names, and names a missing and an extra row", () => {
    const table = (rows: ReadonlyArray<string>) =>
      ["# t", "", "## Endpoints", "", "| method and path | what |", "|---|---|", ...rows.map((row) => `| ${row} | x |`), "", "## Next"].join("\n")
    expect([...documentedOperations(table(["`GET /docs`, `GET /docs/{name}`", "`PUT /contacts/{id}` *(extension)*"])).keys()]).toEqual([
      "GET /docs",
      "GET /docs/{}",
      "PUT /contacts/{}"
    ])
    expect(servedOperations().has(operationKey("PUT", "/contacts/{id}"))).toBe(true)
    // The real table with one row removed and one made up: both are named.
    const rows = markdown.split("\n")
    const verifyRow = rows.findIndex((line) => line.startsWith("| `GET /verify`"))
    expect(verifyRow).toBeGreaterThan(0)
    const edited = [...rows.slice(0, verifyRow), "| `POST /verify/again` | x | x |", ...rows.slice(verifyRow + 1)].join("\n")
    const found = ["a row for POST /verify/again, which the API does not serve", "no row for GET /verify"]
    expect(differences(markdown)).not.toEqual(expect.arrayContaining([found[0]]))
    expect(differences(edited)).toEqual(expect.arrayContaining(found))
  })
})

describe("docs/http-api.md, the status table", () => {
  it("names every status an error code answers with", () => {
    const markdown = readFileSync(page, "utf8")
    const start = markdown.indexOf("\n## Statuses\n")
    expect(start).toBeGreaterThan(0)
    const section = markdown.slice(start, markdown.indexOf("\n## ", start + 1))
    const listed = new Set(
      section
        .split("\n")
        .filter((line) => line.startsWith("|"))
        .flatMap((line) => [...line.slice(1).split("|")[0]!.matchAll(/\b[1-5]\d\d\b/g)].map((match) => Number(match[0])))
    )
    const answered = [...new Set(Object.values(ERROR_CODE_STATUSES))].sort()
    expect(answered.filter((status) => !listed.has(status))).toEqual([])
  })
})
