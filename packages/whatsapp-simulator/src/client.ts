import type { SimulatedMedia } from "./media.js"
import type { InboundContent, SimulatedNumber } from "./payloads.js"
import type { Notification, ReadReceiptCall, Received } from "./records.js"
import type { Answer, Route, ShareRule } from "./script.js"
import type { SimulatedTemplate, TemplateReference, TemplateSeed } from "./templates.js"
import type { WebhookDelivery } from "./webhook.js"

/**
 * A simulator running in another process (for example `npx switchboard-whatsapp-simulator`
 * beside a benchmark), driven through its control API (`/_simulator`). Each method is one
 * request; a refusal rejects with the simulator's message. Tokens in `received()` are cut
 * to their last four characters.
 *
 * @category simulator
 */
export interface SimulatorClient {
  readonly url: string
  readonly received: (filter?: { readonly route?: Route; readonly phone_number_id?: string }) => Promise<ReadonlyArray<Received>>
  /**
   * How many requests (of one route and/or number) arrived, and how many of them were
   * answered (`GET /_simulator/received/count`): one small answer, however many arrived.
   */
  readonly receivedCount: (filter?: { readonly route?: Route; readonly phone_number_id?: string }) => Promise<{ readonly count: number; readonly answered: number }>
  readonly notifications: () => Promise<ReadonlyArray<Notification>>
  /** The read receipts received (`GET /_simulator/read-receipts`), optionally of one number. */
  readonly readReceipts: (phoneNumberId?: string) => Promise<ReadonlyArray<ReadReceiptCall>>
  readonly script: (answers: ReadonlyArray<Answer>, route?: Route) => Promise<{ readonly pending: number }>
  readonly refuseRecipient: (to: string, answer: Answer) => Promise<void>
  readonly clearRecipient: (to: string) => Promise<void>
  readonly setShare: (rule: ShareRule | null) => Promise<void>
  readonly setDefault: (answer: Answer) => Promise<void>
  readonly configure: (settings: {
    readonly webhook_url?: string | null
    readonly app_secret?: string | null
    readonly statuses?: ReadonlyArray<"sent" | "delivered" | "read">
    readonly status_delay_ms?: number
  }) => Promise<void>
  readonly addNumber: (number: SimulatedNumber) => Promise<void>
  readonly postInbound: (options: {
    readonly from: string
    readonly profile_name: string
    readonly message: InboundContent
    readonly phone_number_id?: string
    /** Unix seconds as a string (Meta's `timestamp`); default now. */
    readonly timestamp?: string
  }) => Promise<{ readonly id: string; readonly delivery: WebhookDelivery }>
  /** Keeps a customer's file (`POST /_simulator/media`): its id for an inbound message's media. */
  readonly registerMedia: (
    bytes: Uint8Array,
    options: { readonly mime_type: string; readonly filename?: string; readonly phone_number_id?: string }
  ) => Promise<SimulatedMedia>
  /** Every media the simulator holds (registered and uploaded). */
  readonly media: () => Promise<ReadonlyArray<SimulatedMedia>>
  /** The bytes of a media (an upload a send referred to, say). */
  readonly mediaContent: (id: string) => Promise<Buffer>
  /** The templates of `waba_id` (every account's when omitted), in the order the list API pages them. */
  readonly templates: (waba_id?: string) => Promise<ReadonlyArray<SimulatedTemplate>>
  /** Seeds templates as Meta holds them (`POST /_simulator/templates`); answers them with their ids. */
  readonly seedTemplates: (options: { readonly waba_id?: string; readonly templates: ReadonlyArray<TemplateSeed> }) => Promise<ReadonlyArray<SimulatedTemplate>>
  /** Sets a template's status and posts `message_template_status_update` (`POST /_simulator/templates/status`). */
  readonly setTemplateStatus: (
    options: Partial<TemplateReference> & { readonly status: string; readonly reason?: string; readonly notify?: boolean; readonly webhook_url?: string }
  ) => Promise<{ readonly template: SimulatedTemplate; readonly delivery: WebhookDelivery | null }>
  /** Sets a template's category and posts `template_category_update` (`POST /_simulator/templates/category`). */
  readonly setTemplateCategory: (
    options: Partial<TemplateReference> & { readonly category: string; readonly notify?: boolean; readonly webhook_url?: string }
  ) => Promise<{ readonly template: SimulatedTemplate; readonly previous_category: string; readonly delivery: WebhookDelivery | null }>
  readonly reset: () => Promise<void>
}

/**
 * A {@link SimulatorClient} for the simulator at `url` (its base URL, as printed by
 * `serve`).
 *
 * @category simulator
 * @example
 * import { connectSimulator } from "@switchboard/whatsapp-simulator"
 * const simulator = connectSimulator("http://127.0.0.1:4010")
 * await simulator.script([{ code: 130429 }, { http_status: 503 }])
 * const sends = await simulator.received({ route: "messages" })
 */
export const connectSimulator = (url: string): SimulatorClient => {
  const base = `${url.replace(/\/+$/, "")}/_simulator`
  const call = async <A>(method: string, path: string, body?: unknown): Promise<A> => {
    const response = await fetch(`${base}${path}`, {
      method,
      ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
    })
    const answer = (await response.json().catch(() => ({}))) as { error?: { message?: string } }
    if (!response.ok) throw new Error(answer.error?.message ?? `the simulator answered HTTP ${response.status}`)
    return answer as A
  }
  const none = () => undefined
  return {
    url,
    received: async (filter = {}) => {
      const query = new URLSearchParams(Object.entries(filter).filter((entry): entry is [string, string] => entry[1] !== undefined))
      const text = query.toString()
      return (await call<{ received: ReadonlyArray<Received> }>("GET", `/received${text === "" ? "" : `?${text}`}`)).received
    },
    receivedCount: async (filter = {}) => {
      const query = new URLSearchParams(Object.entries(filter).filter((entry): entry is [string, string] => entry[1] !== undefined))
      const text = query.toString()
      const { count, answered } = await call<{ count: number; answered: number }>("GET", `/received/count${text === "" ? "" : `?${text}`}`)
      return { count, answered }
    },
    notifications: async () => (await call<{ notifications: ReadonlyArray<Notification> }>("GET", "/notifications")).notifications,
    readReceipts: async (phoneNumberId) =>
      (await call<{ read_receipts: ReadonlyArray<ReadReceiptCall> }>(
        "GET",
        `/read-receipts${phoneNumberId === undefined ? "" : `?phone_number_id=${encodeURIComponent(phoneNumberId)}`}`
      )).read_receipts,
    script: (answers, route = "messages") => call("POST", "/script", { answers, route }),
    refuseRecipient: (to, answer) => call("PUT", `/recipients/${encodeURIComponent(to)}`, answer).then(none),
    clearRecipient: (to) => call("DELETE", `/recipients/${encodeURIComponent(to)}`).then(none),
    setShare: (rule) => (rule === null ? call("DELETE", "/share") : call("PUT", "/share", rule)).then(none),
    setDefault: (answer) => call("PUT", "/default", answer).then(none),
    configure: (settings) => call("PUT", "/settings", settings).then(none),
    addNumber: (number) => call("POST", "/numbers", number).then(none),
    postInbound: (options) => call("POST", "/inbound", options),
    registerMedia: async (bytes, options) => {
      const query = new URLSearchParams(Object.entries(options).filter((entry): entry is [string, string] => entry[1] !== undefined))
      const response = await fetch(`${base}/media?${query.toString()}`, { method: "POST", body: bytes })
      const answer = (await response.json().catch(() => ({}))) as { media?: SimulatedMedia; error?: { message?: string } }
      if (!response.ok || answer.media === undefined) throw new Error(answer.error?.message ?? `the simulator answered HTTP ${response.status}`)
      return answer.media
    },
    media: async () => (await call<{ media: ReadonlyArray<SimulatedMedia> }>("GET", "/media")).media,
    mediaContent: async (id) => {
      const response = await fetch(`${base}/media/${encodeURIComponent(id)}/content`)
      if (!response.ok) throw new Error(`the simulator answered HTTP ${response.status} for media ${id}`)
      return Buffer.from(await response.arrayBuffer())
    },
    templates: async (waba_id) =>
      (await call<{ templates: ReadonlyArray<SimulatedTemplate> }>("GET", `/templates${waba_id === undefined ? "" : `?waba_id=${encodeURIComponent(waba_id)}`}`)).templates,
    seedTemplates: async (options) => (await call<{ templates: ReadonlyArray<SimulatedTemplate> }>("POST", "/templates", options)).templates,
    setTemplateStatus: (options) => call("POST", "/templates/status", options),
    setTemplateCategory: (options) => call("POST", "/templates/category", options),
    reset: () => call("POST", "/reset").then(none)
  }
}
