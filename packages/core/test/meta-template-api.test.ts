import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { graphTemplateApi, MetaTemplateCallFailed, metaTemplateCallRetryable } from "@switchboard/core"
import { startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"

// Meta's template management API as the client reads it (docs/templates-and-replies.md
// "Templates from Meta"), against the WhatsApp simulator: its template library, and its
// script for Meta's refusals.

const TOKEN = "EAAGtemplatetoken0000000000000001"
const WABA = "102290129340398"

let simulator: WhatsAppSimulator
beforeAll(async () => {
  simulator = await startSimulator()
})
afterAll(() => simulator.close())
beforeEach(() => {
  simulator.reset()
  simulator.addNumber({ phone_number_id: "880101", display_phone_number: "+31 6 1234 5678", waba_id: WABA, access_token: TOKEN })
})

const api = () => graphTemplateApi({ baseUrl: simulator.url, apiVersion: "v21.0" })
const account = { waba_id: WABA, access_token: TOKEN }
const body = [{ type: "BODY", text: "Hi {{1}}", example: { body_text: [["Ann"]] } }]

describe("Meta's template API through the Graph API", () => {
  it.live("list: every page by its cursor, null after the last; the fields asked for (rejected_reason is not among Meta's defaults)", () =>
    Effect.gen(function* () {
      simulator.seedTemplates({
        waba_id: WABA,
        templates: [
          { name: "a", language: "en_US", category: "UTILITY", components: body },
          { name: "b", language: "en_US", category: "UTILITY", components: body },
          { name: "c", language: "en_US", category: "UTILITY", components: body, status: "REJECTED", rejected_reason: "INVALID_FORMAT" }
        ]
      })
      const first = yield* api().list(account, { after: null, limit: 2 })
      expect(first.templates).toHaveLength(2)
      expect(first.after).not.toBeNull()
      const last = yield* api().list(account, { after: first.after, limit: 2 })
      expect(last.after).toBeNull()
      const all = [...first.templates, ...last.templates] as Array<{ name: string; rejected_reason: string; id: string; status: string }>
      expect(all.map((each) => each.name).sort()).toEqual(["a", "b", "c"])
      expect(all.find((each) => each.name === "c")).toMatchObject({ status: "REJECTED", rejected_reason: "INVALID_FORMAT" })
      expect(all.every((each) => typeof each.id === "string" && each.id !== "")).toBe(true)
    })
  )

  it.live("list: a 200 without a data array (a base URL that is not the Graph API: a web page) is a failure, not an empty account", () =>
    Effect.gen(function* () {
      const page = createServer((_, response) => response.writeHead(200, { "content-type": "text/html" }).end("<html>Welcome</html>"))
      yield* Effect.promise(() => new Promise<void>((resolve) => page.listen(0, "127.0.0.1", resolve)))
      yield* Effect.addFinalizer(() => Effect.promise(() => new Promise<void>((resolve) => page.close(() => resolve()))))
      const baseUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}`
      const failure = yield* Effect.flip(graphTemplateApi({ baseUrl }).list(account, { after: null, limit: 100 }))
      expect(failure).toBeInstanceOf(MetaTemplateCallFailed)
      expect(failure.reason).toContain("without a list of templates")
    }).pipe(Effect.scoped)
  )

  it.live("submit: Meta's id, PENDING, and the category Meta gave; remove by hsm_id deletes that one at Meta", () =>
    Effect.gen(function* () {
      const submitted = yield* api().submit(account, { name: "spring_sale", language: "en_US", category: "MARKETING", components: body })
      expect([submitted.status, submitted.category]).toEqual(["PENDING", "MARKETING"])
      expect(simulator.templates.find({ waba_id: WABA, name: "spring_sale", language: "en_US" })?.id).toBe(submitted.id)
      yield* api().submit(account, { name: "spring_sale", language: "de_DE", category: "MARKETING", components: body })
      yield* api().remove(account, { name: "spring_sale", hsm_id: submitted.id })
      expect(simulator.templates.list(WABA).map((each) => each.language)).toEqual(["de_DE"])
      yield* api().remove(account, { name: "spring_sale", hsm_id: null })
      expect(simulator.templates.list(WABA)).toEqual([])
    })
  )

  it.live("Meta's error: its message, code and subcode; the token never in the failure", () =>
    Effect.gen(function* () {
      yield* api().submit(account, { name: "twice", language: "en_US", category: "UTILITY", components: body })
      const duplicate = yield* Effect.flip(api().submit(account, { name: "twice", language: "en_US", category: "UTILITY", components: body }))
      expect([duplicate.provider_code, duplicate.provider_subcode, duplicate.http_status]).toEqual(["100", "2388024", 400])
      expect(metaTemplateCallRetryable(duplicate)).toBe(false)
      simulator.script.enqueue([{ code: 100, message: `Invalid parameter ${TOKEN}` }], "templates_create")
      const echoed = yield* Effect.flip(api().submit(account, { name: "other", language: "en_US", category: "UTILITY", components: body }))
      expect(echoed.reason).toContain("Invalid parameter [redacted]")
      expect(echoed.reason).not.toContain(TOKEN)
    })
  )

  it.live("which failures are tried again: codes 1, 2, 4, 80008, 130429, any 5xx, no answer; not a refused token or a bad request", () =>
    Effect.gen(function* () {
      const answers = [{ code: 1 }, { code: 2 }, { code: 4 }, { code: 80008 }, { code: 130429 }, { http_status: 503 }, { code: 190 }, { code: 100 }, { http_status: 401 }]
      simulator.script.enqueue(answers, "templates_list")
      const retried = []
      for (const _ of answers) retried.push(metaTemplateCallRetryable(yield* Effect.flip(api().list(account, { after: null, limit: 100 }))))
      expect(retried).toEqual([true, true, true, true, true, true, false, false, false])
      const refused = yield* Effect.flip(api().list({ waba_id: WABA, access_token: "EAAGwrong" }, { after: null, limit: 2 }))
      expect([refused.http_status, refused.provider_code, metaTemplateCallRetryable(refused)]).toEqual([401, "190", false])
      // No answer at all: a port nothing listens on.
      const closed = createServer()
      yield* Effect.promise(() => new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve)))
      const port = (closed.address() as AddressInfo).port
      yield* Effect.promise(() => new Promise<void>((resolve) => closed.close(() => resolve())))
      const unreachable = yield* Effect.flip(graphTemplateApi({ baseUrl: `http://127.0.0.1:${port}` }).list(account, { after: null, limit: 100 }))
      expect([unreachable.http_status, unreachable.network_error, metaTemplateCallRetryable(unreachable)]).toEqual([null, "ECONNREFUSED", true])
      expect(unreachable.reason).not.toContain(TOKEN)
    })
  )
})
