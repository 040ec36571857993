import type { IncomingMessage, ServerResponse } from "node:http"
import { pipeline } from "node:stream/promises"
import type { GraphRequest } from "./graph.js"
import type { MediaLibrary, SimulatedMedia } from "./media.js"
import type { InboundContent, SimulatedNumber } from "./payloads.js"
import type { Notification, ReadReceiptCall, Received } from "./records.js"
import { type Answer, type Route, ROUTES, type Script, type ShareRule } from "./script.js"
import type { SimulatorSettings } from "./settings.js"
import { type SimulatedTemplate, type TemplateLibrary, TemplateNotFoundError, type TemplateReference, type TemplateSeed } from "./templates.js"
import type { WebhookDelivery } from "./webhook.js"

/**
 * The control API, under `/_simulator` on the simulator's port (JSON in, JSON out; errors
 * are `400 {error: {message}}`, unknown routes 404). No authentication: it listens where
 * the simulator does (127.0.0.1 by default).
 *
 * - `GET /_simulator/received?route=&phone_number_id=` → `{received: Received[]}`, each
 *   `authorization` cut to its scheme and last four characters (`"Bearer …0001"`)
 * - `GET /_simulator/received/count?route=&phone_number_id=` → `{count, answered}`: how many
 *   of those requests arrived and how many of them were answered, without copying them (a
 *   load generator polls it while thousands arrive)
 * - `GET /_simulator/read-receipts?phone_number_id=` → `{read_receipts: ReadReceiptCall[]}`
 * - `GET /_simulator/notifications` → `{notifications: Notification[]}`
 * - `GET /_simulator/numbers` → `{numbers}` (tokens shown as `access_token_last4`);
 *   `POST /_simulator/numbers` a {@link SimulatedNumber} → `{numbers}`
 * - `GET|PUT /_simulator/settings` (`webhook_url`, `app_secret`, `statuses`,
 *   `status_delay_ms`) → the settings, `app_secret_set` instead of the secret
 * - `POST /_simulator/script` `{answers, route?}` → `{pending}`
 * - `PUT|DELETE /_simulator/recipients/{to}` (PUT body: an {@link Answer})
 * - `PUT|DELETE /_simulator/share` (PUT body: `{fraction, seed, answer}`)
 * - `PUT /_simulator/default` (body: an {@link Answer}, e.g. `{delay_ms: 200}`)
 * - `POST /_simulator/inbound` `{from, profile_name, message, phone_number_id?}` → `{id, delivery}`
 * - `POST /_simulator/media?mime_type=&filename=&phone_number_id=` with the file's bytes as
 *   the body (streamed, at most 100 MiB) → `{media}`: a customer's file, its `id` for an
 *   inbound message's media (`sha256_base64` is what the message's `sha256` carries)
 * - `GET /_simulator/media` → `{media: SimulatedMedia[]}`; `GET /_simulator/media/{id}` →
 *   `{media}`; `GET /_simulator/media/{id}/content` → the bytes (what a send referred to)
 * - `GET /_simulator/templates?waba_id=` → `{templates: SimulatedTemplate[]}` (every
 *   account's without `waba_id`)
 * - `POST /_simulator/templates` `{waba_id?, templates: TemplateSeed[]}` → `{templates}`
 *   (seeded as Meta holds them; no webhook)
 * - `POST /_simulator/templates/status` `{waba_id?, id | (name, language), status, reason?,
 *   notify?, webhook_url?}` → `{template, delivery}`: the status set and
 *   `message_template_status_update` posted
 * - `POST /_simulator/templates/category` `{waba_id?, id | (name, language), category,
 *   notify?, webhook_url?}` → `{template, previous_category, delivery}`: the category set and
 *   `template_category_update` posted
 * - `POST /_simulator/reset` → `{reset: true}`
 *
 * An unknown template answers 404 `{error: {message}}`.
 */
export const handleControl = async (
  simulator: ControlledSimulator,
  request: GraphRequest,
  req: IncomingMessage,
  res: ServerResponse
): Promise<void> => {
  try {
    if (await mediaRoute(simulator, request, req, res)) return
    const answer = await route(simulator, request)
    if (answer === undefined) return write(res, 404, { error: { message: `no control route ${request.method} ${request.path}` } })
    write(res, 200, answer)
  } catch (error) {
    write(res, error instanceof TemplateNotFoundError ? 404 : 400, { error: { message: error instanceof Error ? error.message : String(error) } })
  }
}

/**
 * What the control API acts on: the members of `WhatsAppSimulator` (simulator.ts, which
 * passes itself to {@link handleControl}) that the control routes call. Declared here so
 * this module need not import simulator.ts.
 */
export interface ControlledSimulator {
  readonly script: Script
  readonly settings: SimulatorSettings
  received(filter?: { readonly route?: Received["route"]; readonly phone_number_id?: string }): ReadonlyArray<Received>
  readReceipts(phoneNumberId?: string): ReadonlyArray<ReadReceiptCall>
  notifications(): ReadonlyArray<Notification>
  numbers(): ReadonlyArray<SimulatedNumber>
  addNumber(number: SimulatedNumber): void
  configure(settings: Partial<SimulatorSettings>): SimulatorSettings
  readonly media: MediaLibrary
  registerMedia(options: {
    readonly mime_type: string
    readonly source?: AsyncIterable<Uint8Array>
    readonly filename?: string
    readonly phone_number_id?: string
  }): Promise<SimulatedMedia>
  postInbound(options: {
    readonly from: string
    readonly profile_name: string
    readonly message: InboundContent
    readonly phone_number_id?: string
    /** Unix seconds as a string (Meta's `timestamp`); default now. */
    readonly timestamp?: string
  }): Promise<{ readonly id: string; readonly delivery: WebhookDelivery }>
  readonly templates: TemplateLibrary
  seedTemplates(options: { readonly waba_id?: string; readonly templates: ReadonlyArray<TemplateSeed> }): ReadonlyArray<SimulatedTemplate>
  setTemplateStatus(
    options: Partial<TemplateReference> & { readonly status: string; readonly reason?: string; readonly notify?: boolean; readonly webhook_url?: string }
  ): Promise<{ readonly template: SimulatedTemplate; readonly delivery: WebhookDelivery | null }>
  setTemplateCategory(
    options: Partial<TemplateReference> & { readonly category: string; readonly notify?: boolean; readonly webhook_url?: string }
  ): Promise<{ readonly template: SimulatedTemplate; readonly previous_category: string; readonly delivery: WebhookDelivery | null }>
  reset(): void
}

const route = async (simulator: ControlledSimulator, request: GraphRequest): Promise<unknown> => {
  const { method, path, query } = request
  const body = request.body as Record<string, unknown> | null
  const key = `${method} ${path.replace(/^\/_simulator/, "").replace(/^\/recipients\/[^/]+$/, "/recipients/:to")}`
  switch (key) {
    case "GET /received":
      return {
        received: simulator
          .received({
            ...(query.get("route") === null ? {} : { route: query.get("route") as Route }),
            ...(query.get("phone_number_id") === null ? {} : { phone_number_id: query.get("phone_number_id")! })
          })
          .map((entry) => ({ ...entry, authorization: redacted(entry.authorization) }))
      }
    case "GET /received/count": {
      const matching = simulator.received({
        ...(query.get("route") === null ? {} : { route: query.get("route") as Route }),
        ...(query.get("phone_number_id") === null ? {} : { phone_number_id: query.get("phone_number_id")! })
      })
      let answered = 0
      for (const entry of matching) if (entry.answer !== null) answered += 1
      return { count: matching.length, answered }
    }
    case "GET /read-receipts":
      return { read_receipts: simulator.readReceipts(query.get("phone_number_id") ?? undefined) }
    case "GET /notifications":
      return { notifications: simulator.notifications() }
    case "GET /numbers":
      return { numbers: simulator.numbers().map(publicNumber) }
    case "POST /numbers":
      simulator.addNumber(object(body, "the number") as unknown as SimulatedNumber)
      return { numbers: simulator.numbers().map(publicNumber) }
    case "GET /settings":
      return publicSettings(simulator.settings)
    case "PUT /settings":
      return publicSettings(simulator.configure(settingsFrom(object(body, "the settings"))))
    case "POST /script": {
      const fields = object(body, "the script")
      if (!Array.isArray(fields.answers)) throw new TypeError("answers must be a list of answers")
      const scriptedRoute = (fields.route ?? "messages") as Route
      if (!ROUTES.includes(scriptedRoute)) throw new TypeError(`route must be one of ${ROUTES.join(", ")}`)
      simulator.script.enqueue(fields.answers as Array<Answer>, scriptedRoute)
      return { pending: simulator.script.pending(scriptedRoute) }
    }
    case "PUT /recipients/:to":
      simulator.script.refuseRecipient(recipientOf(path), object(body, "the answer") as Answer)
      return { recipient: recipientOf(path) }
    case "DELETE /recipients/:to":
      simulator.script.clearRecipient(recipientOf(path))
      return { recipient: recipientOf(path), deleted: true }
    case "PUT /share":
      simulator.script.setShare(object(body, "the share") as unknown as ShareRule)
      return { share: body }
    case "DELETE /share":
      simulator.script.setShare(null)
      return { share: null }
    case "PUT /default":
      simulator.script.setDefault(object(body, "the answer") as Answer)
      return { default: body }
    case "POST /inbound": {
      const fields = object(body, "the inbound message")
      return simulator.postInbound({
        from: String(fields.from ?? ""),
        profile_name: String(fields.profile_name ?? ""),
        message: object(fields.message as Record<string, unknown>, "message") as InboundContent,
        ...(typeof fields.phone_number_id === "string" ? { phone_number_id: fields.phone_number_id } : {}),
        ...(typeof fields.timestamp === "string" ? { timestamp: fields.timestamp } : {})
      })
    }
    case "GET /templates": {
      const waba_id = query.get("waba_id")
      return { templates: simulator.templates.list(waba_id ?? undefined) }
    }
    case "POST /templates": {
      const fields = object(body, "the seed")
      if (!Array.isArray(fields.templates)) throw new TypeError("templates must be a list of templates")
      return { templates: simulator.seedTemplates({ ...optionalText(fields, "waba_id"), templates: fields.templates as Array<TemplateSeed> }) }
    }
    case "POST /templates/status": {
      const fields = object(body, "the status change")
      return simulator.setTemplateStatus({
        ...templateReference(fields),
        status: fields.status as string,
        ...optionalText(fields, "reason"),
        ...optionalText(fields, "webhook_url"),
        ...notifyOf(fields)
      })
    }
    case "POST /templates/category": {
      const fields = object(body, "the category change")
      return simulator.setTemplateCategory({
        ...templateReference(fields),
        category: fields.category as string,
        ...optionalText(fields, "webhook_url"),
        ...notifyOf(fields)
      })
    }
    case "POST /reset":
      simulator.reset()
      return { reset: true }
    default:
      return undefined
  }
}

/**
 * The control API's media routes, which answer bytes or read them streamed; `false` for any
 * other path.
 */
const mediaRoute = async (simulator: ControlledSimulator, request: GraphRequest, req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
  const match = /^\/_simulator\/media(?:\/([^/]+)(\/content)?)?$/.exec(request.path)
  if (match === null) return false
  const [, id, content] = match
  if (request.method === "POST" && id === undefined) {
    const text = (name: string) => request.query.get(name) ?? undefined
    const media = await simulator.registerMedia({
      mime_type: text("mime_type") ?? req.headers["content-type"] ?? "",
      source: req,
      ...(text("filename") === undefined ? {} : { filename: text("filename")! }),
      ...(text("phone_number_id") === undefined ? {} : { phone_number_id: text("phone_number_id")! })
    })
    write(res, 200, { media })
    return true
  }
  if (request.method !== "GET") return false
  if (id === undefined) {
    write(res, 200, { media: simulator.media.list() })
    return true
  }
  const media = simulator.media.get(decodeURIComponent(id))
  if (media === undefined) {
    write(res, 404, { error: { message: `no media ${id}` } })
    return true
  }
  if (content === undefined) {
    write(res, 200, { media })
    return true
  }
  res.writeHead(200, { "content-type": media.mime_type, "content-length": String(media.file_size) })
  await pipeline(simulator.media.stream(media.id), res)
  return true
}

/** The `waba_id`, `id`, `name` and `language` of a control body that names a template (each a string when given). */
const templateReference = (fields: Record<string, unknown>): Partial<TemplateReference> => ({
  ...optionalText(fields, "waba_id"),
  ...optionalText(fields, "id"),
  ...optionalText(fields, "name"),
  ...optionalText(fields, "language")
})

/** `{[name]: value}` when the field is given (a string, else a `TypeError`), `{}` when absent. */
const optionalText = (fields: Record<string, unknown>, name: string): Record<string, string> => {
  const value = fields[name]
  if (value === undefined || value === null) return {}
  if (typeof value !== "string") throw new TypeError(`${name} must be a string`)
  return { [name]: value }
}

const notifyOf = (fields: Record<string, unknown>): { notify?: boolean } => {
  if (fields.notify === undefined) return {}
  if (typeof fields.notify !== "boolean") throw new TypeError("notify must be true or false")
  return { notify: fields.notify }
}

/** A number without its token: `access_token_last4` of each. */
export const publicNumber = (number: SimulatedNumber) => {
  const { access_token, ...rest } = number
  const tokens = typeof access_token === "string" ? [access_token] : access_token
  return { ...rest, access_token_last4: tokens.map((token) => token.slice(-4)) }
}

const publicSettings = (settings: SimulatorSettings) => ({
  webhook_url: settings.webhookUrl,
  app_secret_set: settings.appSecret !== null,
  statuses: settings.statuses,
  status_delay_ms: settings.statusDelayMs
})

const settingsFrom = (fields: Record<string, unknown>): Partial<SimulatorSettings> => ({
  ...(fields.webhook_url === undefined ? {} : { webhookUrl: fields.webhook_url as string | null }),
  ...(fields.app_secret === undefined ? {} : { appSecret: fields.app_secret as string | null }),
  ...(fields.statuses === undefined ? {} : { statuses: fields.statuses as SimulatorSettings["statuses"] }),
  ...(fields.status_delay_ms === undefined ? {} : { statusDelayMs: fields.status_delay_ms as number })
})

/** `"Bearer EAAG…0001"` → `"Bearer …0001"`: enough to tell tokens apart, never the token. */
const redacted = (authorization: string | null): string | null =>
  authorization === null ? null : authorization.replace(/^(\S+\s+)?\S*?(\S{0,4})$/, (_all, scheme: string | undefined, last: string) => `${scheme ?? ""}…${last}`)

const recipientOf = (path: string): string => decodeURIComponent(path.split("/").pop() ?? "")

const object = (value: unknown, what: string): Record<string, unknown> => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new TypeError(`${what} must be a JSON object`)
  return value as Record<string, unknown>
}

const write = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" })
  res.end(JSON.stringify(body))
}
