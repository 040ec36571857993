import type { IncomingMessage, ServerResponse } from "node:http"
import type { GraphHost, GraphOutcome, GraphRequest } from "./graph.js"
import { NONE, scriptedRefusal, tokensOf, writeJson } from "./graphAnswers.js"
import { invalidParameterError, templateBeingDeletedError, templateError, templateExistsError, unknownObjectError } from "./graphErrors.js"
import type { Route } from "./script.js"
import { type SimulatedTemplate, TEMPLATE_CATEGORIES } from "./templates.js"

/**
 * The page size of `GET …/message_templates` when `limit` is not given (Meta's default, 25).
 *
 * @category templates
 */
export const DEFAULT_TEMPLATE_PAGE_SIZE = 25

/**
 * The largest page `GET …/message_templates` answers: a larger `limit` is cut to it (Meta
 * documents no maximum for this edge; 100 is what a client should ask for).
 *
 * @category templates
 */
export const MAX_TEMPLATE_PAGE_SIZE = 100

/** The fields a template answers with when `fields` is not given (Meta's default set, as the simulator holds it). */
const DEFAULT_FIELDS = ["name", "components", "language", "status", "category", "id"] as const

/** The fields the simulator holds; `fields` may also name Meta's others, which it leaves out. */
const HELD_FIELDS = new Set(["id", "name", "language", "status", "category", "components", "rejected_reason"])

/** Fields Meta's template node has that the simulator does not keep: asked for, they are left out (not refused). */
const UNHELD_META_FIELDS = new Set([
  "parameter_format",
  "sub_category",
  "quality_score",
  "previous_category",
  "correct_category",
  "message_send_ttl_seconds",
  "library_template_name",
  "cta_url_link_tracking_opted_out"
])

/**
 * The template routes of an account, `/{version}/{waba_id}/message_templates`, after the
 * token was found to be some number's: the account must have a number this token uses (else
 * Meta's 100 subcode 33), then the request is checked (100), then the {@link Script} of the
 * route decides, then:
 * - `GET`: a page `{data, paging: {cursors: {before, after}, previous?, next?}}` (`fields`,
 *   `limit` (default 25, at most 100), `after`, `before`, and Meta's filters `name` (a part of
 *   the name), `status`, `language`, `category`); no `next` on the last page, `{data: []}`
 *   when nothing matches;
 * - `POST` `{name, language, category, components}`: `{id, status: "PENDING", category}`;
 *   a name and language the account holds → 100 subcode 2388024; one deleted less than 30
 *   days ago → 100 subcode 2388023;
 * - `DELETE ?name=…[&hsm_id=…]`: `{success: true}` once every language of the name (or the
 *   one of that id) is deleted; none → 100 "Message template not found".
 */
export const answerTemplates = async (
  host: GraphHost,
  request: GraphRequest,
  token: string,
  req: IncomingMessage,
  res: ServerResponse
): Promise<GraphOutcome> => {
  const waba_id = request.objectId!
  const reachable = host.numbers().some((number) => number.waba_id === waba_id && tokensOf(number).includes(token))
  if (!reachable) return { ...NONE, answer: writeJson(res, 400, unknownObjectError(request.method, waba_id)) }
  const route = request.route as Extract<Route, `templates_${string}`>
  const action = route === "templates_list" ? listAction(host, waba_id, request) : route === "templates_create" ? createAction(host, waba_id, request) : deleteAction(host, waba_id, request)
  // Checked before the script (as a send's body is), and again when acting (a scripted delay may have let the account change).
  const refusal = action.check()
  if (refusal !== null) return { ...NONE, answer: writeJson(res, 400, refusal) }
  const scripted = host.script.answerFor(route, null)
  const scriptedAnswer = await scriptedRefusal(scripted, req, res)
  if (scriptedAnswer !== null) return { ...NONE, scripted, answer: scriptedAnswer }
  const late = action.check()
  if (late !== null) return { ...NONE, scripted, answer: writeJson(res, 400, late) }
  return { ...NONE, scripted, answer: writeJson(res, 200, action.act()) }
}

/** One template call: `check` answers Meta's refusal (or `null`), `act` makes the change and answers its body. */
interface Action {
  readonly check: () => unknown
  readonly act: () => unknown
}

/** `GET`: the query (`limit`, `fields`, the cursors, the filters) checked, then one page. */
const listAction = (host: GraphHost, waba_id: string, request: GraphRequest): Action => {
  const { query } = request
  const limitText = query.get("limit")
  const limit = Math.min(limitText === null ? DEFAULT_TEMPLATE_PAGE_SIZE : Number(limitText), MAX_TEMPLATE_PAGE_SIZE)
  const fieldsText = query.get("fields")
  const fields = fieldsText === null ? [...DEFAULT_FIELDS] : fieldsText.split(",").map((field) => field.trim()).filter((field) => field !== "")
  const after = query.get("after") ?? undefined
  const before = query.get("before") ?? undefined
  const filter = Object.fromEntries(FILTERS.flatMap((key) => (query.get(key) === null ? [] : [[key, query.get(key)!]])))
  const page = () => host.templates.page(waba_id, { limit, filter, ...(after === undefined ? (before === undefined ? {} : { before }) : { after }) })
  return {
    check: () => {
      if (limitText !== null && !/^[1-9]\d*$/.test(limitText)) return invalidParameterError("Param limit must be a positive integer.")
      const unknown = fields.find((field) => !HELD_FIELDS.has(field) && !UNHELD_META_FIELDS.has(field))
      if (unknown !== undefined) return invalidParameterError(`Tried accessing nonexisting field (${unknown}) on node type (WhatsAppMessageTemplate)`)
      if (page() === "bad_cursor") return invalidParameterError(`Param ${after === undefined ? "before" : "after"} is not a valid cursor.`)
      return null
    },
    act: () => {
      const found = page()
      if (found === "bad_cursor" || found.templates.length === 0) return { data: [] }
      const wanted = new Set([...fields, "id"])
      const link = (cursor: { after: string } | { before: string }) => {
        const next = new URLSearchParams([...query].filter(([key]) => key !== "after" && key !== "before" && key !== "limit"))
        next.set("limit", String(limit))
        for (const [key, value] of Object.entries(cursor)) next.set(key, value)
        return `${host.url}${request.path}?${next.toString()}`
      }
      return {
        data: found.templates.map((template) => shown(template, wanted)),
        paging: {
          cursors: { before: found.before, after: found.after },
          ...(found.hasPrevious ? { previous: link({ before: found.before! }) } : {}),
          ...(found.hasNext ? { next: link({ after: found.after! }) } : {})
        }
      }
    }
  }
}

/** Meta's list filters the simulator honours. */
const FILTERS = ["name", "status", "language", "category"] as const

/** The template with only the `wanted` fields it holds, in Meta's order. */
const shown = (template: SimulatedTemplate, wanted: ReadonlySet<string>): Record<string, unknown> => {
  const all: Record<string, unknown> = {
    name: template.name,
    components: template.components,
    language: template.language,
    status: template.status,
    category: template.category,
    rejected_reason: template.rejected_reason,
    id: template.id
  }
  return Object.fromEntries(Object.entries(all).filter(([key]) => wanted.has(key)))
}

/** `POST`: the submission checked (fields, then the account's names), then kept `PENDING`. */
const createAction = (host: GraphHost, waba_id: string, request: GraphRequest): Action => {
  const fields = (typeof request.body === "object" && request.body !== null && !Array.isArray(request.body) ? request.body : {}) as Record<string, unknown>
  const submission = () => ({
    name: fields.name as string,
    language: fields.language as string,
    category: String(fields.category).toUpperCase(),
    components: fields.components
  })
  return {
    check: () => {
      const problem = submissionProblem(request.body)
      if (problem !== null) return invalidParameterError(problem)
      const { name, language } = submission()
      const state = host.templates.availability(waba_id, name, language, Date.now())
      if (state === "exists") return templateExistsError(language)
      if (state === "being_deleted") return templateBeingDeletedError(language)
      return null
    },
    act: () => {
      const made = host.templates.create(waba_id, submission(), Date.now()) as SimulatedTemplate
      return { id: made.id, status: made.status, category: made.category }
    }
  }
}

/** What is wrong with a submission (Meta's `(#100)` text), or `null`. */
const submissionProblem = (body: unknown): string | null => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "The request body must be a JSON object."
  const { name, language, category, components } = body as Record<string, unknown>
  if (typeof name !== "string" || name === "") return "The parameter name is required."
  if (!/^[a-z0-9_]{1,512}$/.test(name)) return "Param name must contain only lowercase letters, numbers and underscores, at most 512 characters."
  if (typeof language !== "string" || language === "") return "The parameter language is required."
  if (!/^[a-z]{2,3}(_[A-Za-z]{2,4})?$/.test(language)) return `Param language ${JSON.stringify(language)} is not a supported language code.`
  if (typeof category !== "string" || category === "") return "The parameter category is required."
  if (!TEMPLATE_CATEGORIES.includes(category.toUpperCase())) return `Param category must be one of {${TEMPLATE_CATEGORIES.join(", ")}}.`
  return componentsProblem(components)
}

/** What is wrong with submitted `components` (Meta's `(#100)` text), or `null`. */
const componentsProblem = (components: unknown): string | null => {
  if (components === undefined) return "The parameter components is required."
  if (!Array.isArray(components) || components.length === 0) return "Param components must be a non-empty array."
  const types = ["HEADER", "BODY", "FOOTER", "BUTTONS"]
  for (const [index, component] of components.entries()) {
    const type = (component as { type?: unknown } | null)?.type
    if (typeof component !== "object" || component === null || typeof type !== "string" || !types.includes(type.toUpperCase())) {
      return `Param components[${index}]['type'] must be one of {${types.join(", ")}}.`
    }
  }
  const bodies = components.filter((component) => String((component as { type: string }).type).toUpperCase() === "BODY")
  if (bodies.length !== 1) return "Param components must have exactly one BODY component."
  return null
}

/** `DELETE`: `name` required and matching (with `hsm_id`, that template of the name); then deleted. */
const deleteAction = (host: GraphHost, waba_id: string, request: GraphRequest): Action => {
  const name = request.query.get("name")
  const hsm_id = request.query.get("hsm_id")
  const matching = () => host.templates.list(waba_id).filter((template) => template.name === name && (hsm_id === null || template.id === hsm_id))
  return {
    check: () => {
      if (name === null || name === "") return invalidParameterError("The parameter name is required.")
      if (hsm_id !== null && !/^\d+$/.test(hsm_id)) return invalidParameterError("Param hsm_id must be a valid message template id.")
      if (matching().length === 0) {
        return templateError({
          title: "Message template not found",
          message: hsm_id === null ? `There is no message template named ${name}.` : `There is no message template named ${name} with the id ${hsm_id}.`
        })
      }
      return null
    },
    act: () => {
      host.templates.delete(waba_id, name!, hsm_id, Date.now())
      return { success: true }
    }
  }
}
