import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { promisify } from "node:util"
import { afterAll, describe, expect, it } from "vitest"
import { Effect } from "effect"
import {
  convertObjectSchema,
  defaultRoutes,
  DEFAULT_BASE_PATH,
  defineRoute,
  openApiDocument,
  operationIdOf,
  UnsupportedValidationRule,
  type OpenApiDocument
} from "@switchboard/http-adapter"

const ROOT = resolve(__dirname, "../../..")
const document = openApiDocument({ basePath: DEFAULT_BASE_PATH, routes: defaultRoutes })
const operation = (path: string, method: string) => {
  const found = document.paths[path]?.[method]
  if (found === undefined) throw new Error(`no operation ${method} ${path}`)
  return found
}

describe("fastest-validator → JSON Schema", () => {
  it("converts the rule types the routes use, with their limits", () => {
    expect(
      convertObjectSchema(
        {
          $$strict: "remove",
          name: { type: "string", min: 1, max: 10 },
          note: { type: "string", optional: true, nullable: true },
          page: { type: "number", integer: true, min: 1, convert: true, optional: true },
          ratio: { type: "number", positive: true },
          status: { type: "enum", values: ["open", "closed"], optional: true },
          id: { type: "uuid" },
          email: { type: "email", optional: true },
          ids: { type: "multi", rules: [{ type: "uuid" }, { type: "array", items: { type: "uuid" }, min: 1, max: 1000 }] },
          rows: { type: "array", min: 1, max: 1000, items: { type: "any", optional: true } },
          media: { type: "object", props: { url: { type: "string" }, caption: { type: "string", optional: true } } },
          flag: { type: "boolean", default: false }
        },
        "test"
      )
    ).toEqual({
      type: "object",
      properties: {
        name: { type: "string", minLength: 1, maxLength: 10 },
        note: { type: ["string", "null"] },
        page: { type: "integer", minimum: 1 },
        ratio: { type: "number", exclusiveMinimum: 0 },
        status: { type: "string", enum: ["open", "closed"] },
        id: { type: "string", format: "uuid" },
        email: { type: "string", format: "email" },
        ids: {
          anyOf: [
            { type: "string", format: "uuid" },
            { type: "array", items: { type: "string", format: "uuid" }, minItems: 1, maxItems: 1000 }
          ]
        },
        rows: { type: "array", items: {}, minItems: 1, maxItems: 1000 },
        media: { type: "object", properties: { url: { type: "string" }, caption: { type: "string" } }, required: ["url"] },
        flag: { type: "boolean", default: false }
      },
      required: ["name", "ratio", "id", "ids", "rows", "media"]
    })
  })

  it("fails loudly on a rule type, an option or a shorthand it cannot describe", () => {
    expect(() => convertObjectSchema({ at: { type: "date" } }, "POST /x body")).toThrow(UnsupportedValidationRule)
    expect(() => convertObjectSchema({ at: { type: "date" } }, "POST /x body")).toThrow(/POST \/x body\.at: rule type "date"/)
    expect(() => convertObjectSchema({ name: { type: "string", alpha: true } }, "b")).toThrow(/option\(s\) alpha/)
    expect(() => convertObjectSchema({ name: "string|min:3" }, "b")).toThrow(/string shorthand/)
    expect(() => convertObjectSchema({ list: { type: "array", items: { type: "custom" } } }, "b")).toThrow(/b\.list\[\]/)
  })
})

describe("openApiDocument (docs/api-reference.md)", () => {
  it("is OpenAPI 3.1 for API version 1.0.0 with the base path as server and the bearer scheme", () => {
    expect(document.openapi).toBe("3.1.0")
    expect(document.info).toMatchObject({ version: "1.0.0" })
    expect(document.servers).toEqual([{ url: "/api/v1/api", description: "This server" }])
    expect(document.security).toEqual([{ apiKey: [] }])
    expect(document.components.securitySchemes.apiKey).toMatchObject({ type: "http", scheme: "bearer" })
    expect(openApiDocument({ basePath: "/messaging", routes: defaultRoutes }).servers[0]?.url).toBe("/messaging")
  })

  it("cites no section or file of the team's specification or design (a reader cannot open them)", () => {
    const teamFiles = ["SP" + "EC", "DE" + "SIGN", "ST" + "YLE"].join("|")
    const citation = new RegExp(`\\b(?:${teamFiles})(?: ?\\u00a7|\\.md\\b)|\\.\\./${"sha" + "red"}`, "g")
    expect(JSON.stringify(document).match(citation)).toBeNull()
  })

  it("declares Idempotency-Key, Idempotent-Replayed and the idempotency 400/409/422 codes on exactly the idempotent routes", () => {
    const idempotent = ["post /send", "post /send/template", "post /send/media", "post /send/interactive", "post /messages/{uuid}/reaction", "post /contacts/bulk", "post /broadcasts", "post /media", "post /templates"]
    const seen: Array<string> = []
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        const where = `${method} ${path.replace(DEFAULT_BASE_PATH, "")}`
        const expected = idempotent.includes(where)
        const header = (op.parameters ?? []).find((parameter) => parameter.name === "Idempotency-Key")
        expect(header !== undefined, where).toBe(expected)
        // Another 409 (a hand retry of a disabled webhook endpoint's delivery) is not idempotency's.
        expect(op.responses["409"]?.description?.includes("idempotency_key_in_progress") ?? false, where).toBe(expected)
        expect(op.responses["422"] !== undefined, where).toBe(expected)
        if (!expected) continue
        seen.push(where)
        expect(header).toMatchObject({ in: "header", required: false, schema: { minLength: 1, maxLength: 255 } })
        expect(op.responses["200"]?.headers).toHaveProperty("Idempotent-Replayed")
        expect(op.responses["400"]?.description).toContain("invalid_idempotency_key")
        expect(op.responses["409"]?.description).toContain("idempotency_key_in_progress")
        expect(op.responses["422"]?.description).toContain("idempotency_key_reused")
      }
    }
    expect(seen.sort()).toEqual([...idempotent].sort())
  })

  it("needs no key on the discovery operations (tag Guide) and the bearer key everywhere else", () => {
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        const guide = op.tags[0] === "Guide"
        // WhatsApp's webhook routes: no key (the signature or verify token authenticates), no rate limit.
        const webhook = op.tags[0] === "Webhooks"
        expect(op.security, `${method} ${path}`).toEqual(guide || webhook ? [] : undefined)
        if (!webhook) {
          expect(Object.keys(op.responses).includes("401"), `${method} ${path}`).toBe(!guide)
          expect(Object.keys(op.responses).includes("403"), `${method} ${path}`).toBe(!guide)
        }
        expect(op.responses["429"] !== undefined, `${method} ${path}`).toBe(!webhook)
      }
    }
  })

  it("derives operationIds from method and path, unique", () => {
    expect(operationIdOf({ method: "GET", path: "/contacts/:uuid/labels" })).toBe("getContactsByUuidLabels")
    expect(operationIdOf({ method: "POST", path: "/labels/bulk-delete" })).toBe("postLabelsBulkDelete")
    expect(operationIdOf({ method: "GET", path: "/" })).toBe("getRoot")
    const ids = Object.values(document.paths).flatMap((operations) => Object.values(operations).map((op) => op.operationId))
    expect(new Set(ids).size).toBe(ids.length)
  })

  it("documents path and query parameters and JSON bodies from the handler's validation schemas", () => {
    expect(operation("/contacts/{uuid}", "put").parameters).toEqual([
      { name: "uuid", in: "path", required: true, schema: { type: "string", format: "uuid" } }
    ])
    expect(operation("/contacts/{uuid}", "put").requestBody).toEqual({
      required: true,
      content: {
        "application/json": {
          schema: {
            type: "object",
            properties: {
              first_name: { type: "string" },
              last_name: { type: ["string", "null"] },
              phone: { type: "string" },
              email: { type: ["string", "null"] },
              marketing_opt_out_at: { const: null }
            }
          }
        }
      }
    })
    const chatParameters = operation("/chats", "get").parameters ?? []
    expect(chatParameters.map((parameter) => parameter.name)).toEqual([
      "search", "status", "assigned_to", "group_uuid", "tag_uuid", "favorite", "unread", "date_from", "date_to",
      "sort_by", "sort_order", "pagination", "page", "per_page", "cursor", "limit"
    ])
    expect(chatParameters.find((parameter) => parameter.name === "status")).toEqual({
      name: "status",
      in: "query",
      required: false,
      schema: { type: "string", enum: ["open", "pending", "resolved", "closed"] }
    })
    expect(chatParameters.find((parameter) => parameter.name === "limit")?.schema).toEqual({
      type: "integer",
      minimum: 1,
      maximum: 100
    })
    const body = operation("/contacts/bulk", "post").requestBody as any
    expect(body.content["application/json"].schema.properties.contacts).toMatchObject({ type: "array", minItems: 1, maxItems: 1000 })
    expect(body.content["application/json"].schema.required).toEqual(["contacts"])
  })

  it("gives every success the envelope whose data is the route's schema, records named once", () => {
    const schema = operation("/labels/{uuid}", "get").responses["200"]?.content?.["application/json"]?.schema as any
    expect(schema.required).toEqual(["status", "success", "message", "data", "errors"])
    expect(schema.properties.data).toEqual({ $ref: "#/components/schemas/Label" })
    expect(document.components.schemas.Label).toMatchObject({
      type: "object",
      required: ["uuid", "name", "color", "contacts_count", "created_at", "updated_at"]
    })
    const chats = operation("/chats", "get").responses["200"]?.content?.["application/json"]?.schema as any
    expect(chats.properties.data.properties.chats).toEqual({ type: "array", items: { $ref: "#/components/schemas/Chat" } })
    expect(chats.properties.data.properties.pagination.anyOf).toEqual([
      { $ref: "#/components/schemas/ChatOffsetPagination" },
      { $ref: "#/components/schemas/ChatCursorPagination" }
    ])
    const verify = operation("/verify", "get").responses["200"]?.content?.["application/json"]?.schema as any
    expect(verify.properties.data.required).toEqual(["message", "organization"])
  })

  it("lists the failure statuses and codes each operation can answer with", () => {
    const statuses = (path: string, method: string) => Object.keys(operation(path, method).responses)
    expect(statuses("/verify", "get")).toEqual(["200", "401", "403", "429", "503"])
    expect(statuses("/labels", "post")).toEqual(["200", "400", "401", "403", "413", "415", "429", "503"])
    expect(statuses("/labels/{uuid}", "delete")).toEqual(["200", "400", "401", "403", "404", "429", "503"])
    expect(statuses("/contacts/labels/assign", "post")).toContain("404")
    expect(statuses("/openapi.json", "get")).toEqual(["200", "429", "503"])
    const labels = operation("/labels", "post").responses
    expect(labels["400"]?.description).toContain("`label_name_taken`")
    expect(labels["403"]?.description).toContain("`label_limit_reached`")
    expect(labels["401"]?.description).toContain("`jwt_not_accepted`")
    expect(labels["429"]?.headers).toHaveProperty("Retry-After")
    expect(labels["400"]?.content?.["application/json"]?.schema).toEqual({ $ref: "#/components/schemas/ErrorEnvelope" })
    expect(operation("/send/template", "post").responses["400"]?.description).toContain("`template_parameters_mismatch`")
  })

  it("refuses a route table it cannot describe", () => {
    const route = (extra: object) =>
      defineRoute({ method: "GET", path: "/x/:id", tag: "Guide", summary: "x", handle: () => Effect.succeed({ message: "", data: null }), ...extra })
    expect(() => openApiDocument({ basePath: "", routes: [route({})] })).toThrow(/path parameter "id" has no rule/)
    expect(() =>
      openApiDocument({ basePath: "", routes: [route({ params: { id: { type: "uuid" } }, errors: ["made_up_code"] })] })
    ).toThrow(/"made_up_code" has no status/)
  })
})

const run = promisify(execFile)
const redocly = join(ROOT, "node_modules/.bin/redocly")

/** Lints `doc` with the repository's redocly.yaml; returns the problems redocly reports. */
const lint = async (doc: OpenApiDocument | object, directory: string) => {
  const file = join(directory, `openapi-${Math.random().toString(36).slice(2)}.json`)
  writeFileSync(file, JSON.stringify(doc))
  const { stdout } = await run(redocly, ["lint", file, "--format=json", `--config=${join(ROOT, "redocly.yaml")}`], {
    cwd: ROOT,
    env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" },
    maxBuffer: 16 * 1024 * 1024
  }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? "" }))
  const report = JSON.parse(stdout.slice(stdout.indexOf("{"))) as {
    problems: Array<{ ruleId: string; severity: "error" | "warn"; message: string; location: Array<{ pointer: string }> }>
  }
  return report.problems.map((problem) => ({
    rule: problem.ruleId,
    severity: problem.severity,
    message: problem.message,
    at: problem.location[0]?.pointer
  }))
}

describe.skipIf(!existsSync(redocly))("redocly lint (recommended ruleset, redocly.yaml)", () => {
  const directory = mkdtempSync(join(tmpdir(), "switchboard-openapi-"))
  afterAll(() => rmSync(directory, { recursive: true, force: true }))

  it("finds no problem in the generated document", async () => {
    const problems = await lint(document, directory)
    expect(problems.filter((problem) => problem.severity === "error")).toEqual([])
    expect(problems).toEqual([])
  }, 60_000)

  it("reports errors on a broken document (the lint really runs)", async () => {
    const { "/contacts/{uuid}": contact, ...paths } = document.paths
    const broken = { ...document, paths: { ...paths, "/contacts/{id}": contact } }
    const problems = await lint(broken, directory)
    expect(problems.some((problem) => problem.severity === "error" && problem.rule === "path-parameters-defined")).toBe(true)
  }, 60_000)
})
if (!existsSync(redocly)) console.warn(`redocly lint skipped: ${redocly} is not installed (npm ci installs @redocly/cli)`)
