import { EventEmitter } from "node:events"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { handleControl } from "./control.js"
import { answerGraph, readRequest } from "./graph.js"
import { MediaLibrary, type MediaKind, type SimulatedMedia } from "./media.js"
import {
  type InboundContent,
  inboundMessagePayload,
  mediaMessage,
  newWamid,
  type SimulatedNumber,
  statusError,
  type StatusName,
  statusPayload,
  templateCategoryPayload,
  templateStatusPayload
} from "./payloads.js"
import type { DeliveredInbound } from "./graphReads.js"
import { type Notification, preciseNow, type ReadReceiptCall, readReceiptCallOf, type Received } from "./records.js"
import { type Answer, Script } from "./script.js"
import type { SimulatorSettings } from "./settings.js"
import { postWebhook, type WebhookDelivery } from "./webhook.js"
import { errorTitle } from "./graphErrors.js"
import {
  type SimulatedTemplate,
  TEMPLATE_CATEGORIES,
  TEMPLATE_STATUS_EVENTS,
  type TemplateReference,
  TemplateLibrary,
  type TemplateSeed,
  type TemplateStatus
} from "./templates.js"

/**
 * Options of {@link startSimulator}: where to listen (`port` default 0, any free port;
 * `host` default `127.0.0.1`), the `numbers` it answers for, the initial
 * {@link SimulatorSettings}, `delayMs` (default 0: the wait before every Graph answer no
 * other rule takes, a round trip to Meta; kept by `reset`), and `onEvent`, called with one
 * plain object per request answered and webhook posted (the CLI prints them; no token or
 * secret in them).
 *
 * @category simulator
 */
export interface SimulatorOptions extends Partial<SimulatorSettings> {
  readonly port?: number
  readonly host?: string
  readonly numbers?: ReadonlyArray<SimulatedNumber>
  readonly delayMs?: number
  readonly onEvent?: (event: Record<string, unknown>) => void
}

/**
 * Starts a simulator and resolves once it listens.
 *
 * @category simulator
 * @example
 * import { startSimulator } from "@switchboard/whatsapp-simulator"
 * const simulator = await startSimulator({ numbers: [{ phone_number_id: "1065", display_phone_number: "+1 555-078-3881", waba_id: "1022", access_token: "EAAG-test-token-0001" }] })
 * // point WHATSAPP_API_BASE_URL (or graphApi.baseUrl) at simulator.url
 * await simulator.close()
 */
export const startSimulator = async (options: SimulatorOptions = {}): Promise<WhatsAppSimulator> => {
  const simulator = new WhatsAppSimulator(options)
  await simulator.listen(options.port ?? 0, options.host ?? "127.0.0.1")
  return simulator
}

/**
 * A local stand-in for Meta's WhatsApp Cloud API (see the package README): answers
 * `GET /{version}/{phone_number_id}`, `POST /{version}/{phone_number_id}/messages`, the
 * media look-up `GET /{version}/{media_id}` with its download URL,
 * `POST /{version}/{phone_number_id}/media`, and an account's templates
 * (`GET`, `POST`, `DELETE /{version}/{waba_id}/message_templates`),
 * records every request, follows its {@link Script}, posts signed status notifications
 * and template updates, and serves its control API under `/_simulator`.
 *
 * @category simulator
 */
export class WhatsAppSimulator {
  /** The scripted answers: refusals by recipient, sequences, a share, a default. */
  readonly script = new Script()
  /** The media it holds: customers' files registered for inbound messages, and uploads. */
  readonly media = new MediaLibrary()
  /**
   * The message templates it holds, per WhatsApp Business Account: what `GET
   * …/message_templates` pages, `POST` adds (`PENDING`) and `DELETE` removes. Read it with
   * `templates.list(waba_id)`; change it with {@link seedTemplates}, {@link setTemplateStatus}
   * and {@link setTemplateCategory}.
   */
  readonly templates = new TemplateLibrary()
  private readonly server: Server
  private readonly events = new EventEmitter()
  private readonly numbersById = new Map<string, SimulatedNumber>()
  private readonly receivedList: Array<Received> = []
  private readonly notificationList: Array<Notification> = []
  /** The customers' messages posted by {@link postInbound}, by wamid: what a read receipt may name. */
  private readonly inboundByWamid = new Map<string, DeliveredInbound>()
  private readonly timers = new Set<NodeJS.Timeout>()
  /** Counts the resets: a notification posted across one is not recorded. */
  private generation = 0
  private current: SimulatorSettings
  private closed = false
  private baseUrl = ""

  constructor(private readonly options: SimulatorOptions = {}) {
    this.current = {
      webhookUrl: options.webhookUrl ?? null,
      appSecret: options.appSecret ?? null,
      statuses: options.statuses ?? ["sent", "delivered", "read"],
      statusDelayMs: options.statusDelayMs ?? 100
    }
    for (const number of options.numbers ?? []) this.addNumber(number)
    this.restoreDefault()
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        // A client that went away mid-request: nothing to answer, nothing to record.
        if (!res.headersSent && !res.destroyed) res.writeHead(500).end(String(error))
      })
    })
    this.events.setMaxListeners(0)
  }

  /** Listens on `port` and `host` (called by {@link startSimulator}). */
  async listen(port: number, host: string): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject)
      this.server.listen(port, host, () => resolve())
    })
    const address = this.server.address() as AddressInfo
    const shown = address.family === "IPv6" ? `[${address.address}]` : address.address
    this.baseUrl = `http://${shown}:${address.port}`
  }

  /** The Graph base URL, for example `http://127.0.0.1:41234` (Switchboard's `WHATSAPP_API_BASE_URL`). */
  get url(): string {
    return this.baseUrl
  }

  /** The current settings. */
  get settings(): SimulatorSettings {
    return this.current
  }

  /** Changes some settings (for example the webhook URL once the server under test listens). */
  configure(settings: Partial<SimulatorSettings>): SimulatorSettings {
    const next = { ...this.current, ...settings }
    if (next.webhookUrl !== null && !/^https?:\/\//.test(next.webhookUrl)) throw new TypeError("webhookUrl must be an http(s) URL")
    if (!(Number.isInteger(next.statusDelayMs) && next.statusDelayMs >= 0)) throw new TypeError("statusDelayMs must be a non-negative integer")
    if (!next.statuses.every((status) => ["sent", "delivered", "read"].includes(status))) {
      throw new TypeError("statuses must be sent, delivered or read")
    }
    this.current = next
    return next
  }

  /** Adds (or replaces) a number. */
  addNumber(number: SimulatedNumber): void {
    const tokens = typeof number.access_token === "string" ? [number.access_token] : number.access_token
    if (!/^\d+$/.test(number.phone_number_id)) throw new TypeError("phone_number_id must be digits")
    if (!/^\d+$/.test(number.waba_id)) throw new TypeError("waba_id must be digits")
    if (tokens.length === 0 || tokens.some((token) => typeof token !== "string" || token === "")) {
      throw new TypeError("access_token must be a non-empty string or a list of them")
    }
    this.numbersById.set(number.phone_number_id, number)
  }

  /** The numbers, by id. */
  number(phoneNumberId: string): SimulatedNumber | undefined {
    return this.numbersById.get(phoneNumberId)
  }

  /** Every number it answers for. */
  numbers(): ReadonlyArray<SimulatedNumber> {
    return [...this.numbersById.values()]
  }

  /** What it received, in order; `filter` keeps the requests of one route and/or number. */
  received(filter: { readonly route?: Received["route"]; readonly phone_number_id?: string } = {}): ReadonlyArray<Received> {
    return this.receivedList.filter(
      (entry) =>
        (filter.route === undefined || entry.route === filter.route) &&
        (filter.phone_number_id === undefined || entry.phone_number_id === filter.phone_number_id)
    )
  }

  /** The sends (`POST …/messages`) it received, optionally of one number. */
  sends(phoneNumberId?: string): ReadonlyArray<Received> {
    return this.received({ route: "messages", ...(phoneNumberId === undefined ? {} : { phone_number_id: phoneNumberId }) })
  }

  /** The arrival times (ms, see {@link Received}) of the sends to a number, or of all sends. */
  arrivals(phoneNumberId?: string): ReadonlyArray<number> {
    return this.sends(phoneNumberId).map((entry) => entry.at_ms)
  }

  /**
   * The read receipts it received (`POST …/messages` with `status: "read"`), in order,
   * optionally of one number: which `message_id`, with or without the typing indicator,
   * accepted or refused ({@link ReadReceiptCall}).
   */
  readReceipts(phoneNumberId?: string): ReadonlyArray<ReadReceiptCall> {
    return this.received({ route: "mark_read", ...(phoneNumberId === undefined ? {} : { phone_number_id: phoneNumberId }) }).map(readReceiptCallOf)
  }

  /**
   * The customer's message it delivered as `wamid` ({@link postInbound} and the messages it
   * posts): the number it went to and the sender; `undefined` for any other id. A read
   * receipt must name one of these, sent to its number (else Meta's 131009).
   */
  inboundMessage(wamid: string): DeliveredInbound | undefined {
    return this.inboundByWamid.get(wamid)
  }

  /** The webhooks it posted, in order. */
  notifications(): ReadonlyArray<Notification> {
    return [...this.notificationList]
  }

  /**
   * Resolves with the first truthy value `check` returns, evaluated now and after every
   * request and webhook; rejects after `timeoutMs` (default 10 000 ms) naming `what`.
   */
  waitFor<T>(check: () => T | undefined | null | false, what = "the simulator's condition", timeoutMs = 10_000): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const evaluate = () => {
        const value = check()
        if (value === undefined || value === null || value === false) return
        cleanup()
        resolve(value)
      }
      const timer = setTimeout(() => {
        cleanup()
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`))
      }, timeoutMs)
      const cleanup = () => {
        clearTimeout(timer)
        this.events.off("change", evaluate)
      }
      this.events.on("change", evaluate)
      evaluate()
    })
  }

  /**
   * Posts a signed customer message (Meta's `messages` webhook, stamped `timestamp`: Unix
   * seconds as a string, as Meta sends it; default now) to the webhook URL: from `from`
   * (digits or E.164) with `profile_name`, to `phone_number_id` (default the first number).
   * An earlier `timestamp` plays a message the customer wrote that long ago (a customer
   * service window that closes soon). Fails when no webhook URL is set or the number is
   * unknown.
   */
  async postInbound(options: {
    readonly from: string
    readonly profile_name: string
    readonly message: InboundContent
    readonly phone_number_id?: string
    readonly timestamp?: string
  }): Promise<{ readonly id: string; readonly delivery: WebhookDelivery }> {
    const number = this.requireNumber(options.phone_number_id)
    const id = newWamid()
    const payload = inboundMessagePayload({
      number,
      from: options.from,
      profile_name: options.profile_name,
      message: options.message,
      id,
      ...(options.timestamp === undefined ? {} : { timestamp: options.timestamp })
    })
    this.inboundByWamid.set(id, { phone_number_id: number.phone_number_id, from: options.from })
    const notification = await this.post("inbound", payload, { wamid: id, status: null })
    return { id, delivery: notification.delivery }
  }

  /**
   * Keeps a customer's file for `phone_number_id` (default the first number) under a fresh
   * media id, as Meta holds an inbound message's media: the media look-up
   * (`GET /{version}/{id}`) then answers a download URL for it. `bytes` (a Buffer or
   * Uint8Array), or `source` (any async iterable of bytes, such as `fs.createReadStream`);
   * at most 100 MiB (else it rejects).
   */
  async registerMedia(options: {
    readonly mime_type: string
    readonly bytes?: Uint8Array
    readonly source?: AsyncIterable<Uint8Array>
    readonly filename?: string
    readonly phone_number_id?: string
  }): Promise<SimulatedMedia> {
    const number = this.requireNumber(options.phone_number_id)
    if (typeof options.mime_type !== "string" || !/^[\w.+-]+\/[\w.+-]+/.test(options.mime_type)) throw new TypeError("mime_type must be a MIME type such as image/jpeg")
    const source = options.source ?? (options.bytes === undefined ? undefined : [options.bytes])
    if (source === undefined) throw new TypeError("registerMedia needs bytes or source")
    const media = await this.media.add(source, {
      phone_number_id: number.phone_number_id,
      mime_type: options.mime_type,
      filename: options.filename ?? null,
      source: "inbound"
    })
    if (media === "too_large") throw new RangeError("a media file holds at most 100 MiB (Meta refuses larger ones with 131052)")
    this.changed()
    return media
  }

  /**
   * Registers a customer's file ({@link registerMedia}) and posts the signed message that
   * carries it (`type` image, video, audio, document or sticker; its `id`, `mime_type` and
   * `sha256`, plus `caption` and `filename` when given), as {@link postInbound} does.
   */
  async postInboundMedia(options: {
    readonly from: string
    readonly profile_name: string
    readonly type: MediaKind
    readonly mime_type: string
    readonly bytes?: Uint8Array
    readonly source?: AsyncIterable<Uint8Array>
    readonly caption?: string
    readonly filename?: string
    readonly phone_number_id?: string
  }): Promise<{ readonly id: string; readonly media: SimulatedMedia; readonly delivery: WebhookDelivery }> {
    const media = await this.registerMedia(options)
    const message = mediaMessage(options.type, {
      id: media.id,
      mime_type: media.mime_type,
      sha256: media.sha256_base64,
      ...(options.caption === undefined ? {} : { caption: options.caption }),
      ...(options.filename === undefined ? {} : { filename: options.filename })
    })
    const { id, delivery } = await this.postInbound({
      from: options.from,
      profile_name: options.profile_name,
      message,
      ...(options.phone_number_id === undefined ? {} : { phone_number_id: options.phone_number_id })
    })
    return { id, media, delivery }
  }

  /** Posts a signed `message_template_status_update` for the account `waba_id` (default the first number's). */
  async postTemplateStatus(options: Omit<Parameters<typeof templateStatusPayload>[0], "waba_id"> & { readonly waba_id?: string }) {
    const waba_id = options.waba_id ?? this.requireNumber(undefined).waba_id
    const notification = await this.post("template_status", templateStatusPayload({ ...options, waba_id }), { wamid: null, status: null })
    return notification.delivery
  }

  /**
   * Puts `templates` into the account `waba_id` (default the first number's) as Meta already
   * holds them ({@link TemplateSeed}: `name`, `language`, `category`, `components`, and
   * optionally `status` (default `APPROVED`), `id`, `rejected_reason`): each replaces the
   * template of its name and language and lifts a deletion's block on them. No webhook is
   * posted. Throws a `TypeError` naming a bad field (nothing kept), an `Error` when no number
   * is on that account.
   */
  seedTemplates(options: { readonly waba_id?: string; readonly templates: ReadonlyArray<TemplateSeed> }): ReadonlyArray<SimulatedTemplate> {
    const seeded = this.templates.seed(this.requireAccount(options.waba_id), options.templates)
    this.changed()
    return seeded
  }

  /**
   * Meta's review of a template: sets the status of the template named by `id`, or by `name`
   * and `language`, in `waba_id` (default the first number's), then posts the signed
   * `message_template_status_update` with its id (`message_template_id`, a number), name,
   * language, category, `event` = `status` and `reason` (default `"NONE"`).
   *
   * `status` is an event of {@link TEMPLATE_STATUS_EVENTS}: a status of the list API is kept
   * as it is; `REINSTATED` and `UNARCHIVED` make the template `APPROVED`; `FLAGGED` leaves its
   * status. `rejected_reason` becomes `reason` on `REJECTED`, `"NONE"` on any other status.
   * The webhook goes to `webhook_url` when given, else to the `webhookUrl` setting;
   * `notify: false` posts nothing (a change the client must find by listing).
   *
   * Answers the template as it now is and the webhook's delivery (`null` when not posted).
   * Throws, changing nothing, on an unknown template (`TemplateNotFoundError`), a bad status or
   * reason (`TypeError`), or no webhook URL to post to.
   */
  async setTemplateStatus(
    options: Partial<TemplateReference> & {
      readonly status: string
      readonly reason?: string
      readonly notify?: boolean
      readonly webhook_url?: string
    }
  ): Promise<{ readonly template: SimulatedTemplate; readonly delivery: WebhookDelivery | null }> {
    const { status, reason } = options
    if (typeof status !== "string" || !TEMPLATE_STATUS_EVENTS.includes(status)) throw new TypeError(`status must be one of ${TEMPLATE_STATUS_EVENTS.join(", ")}`)
    if (reason !== undefined && !(typeof reason === "string" && /^[A-Z_]+$/.test(reason))) throw new TypeError("reason must be Meta's upper-case reason, such as INVALID_FORMAT")
    const found = this.templates.find({ ...options, waba_id: this.requireAccount(options.waba_id) })
    const url = this.notificationUrl(options)
    const next: TemplateStatus = status === "REINSTATED" || status === "UNARCHIVED" ? "APPROVED" : status === "FLAGGED" ? found.status : (status as TemplateStatus)
    const template = status === "FLAGGED" ? found : this.templates.setStatus(found.id, next, next === "REJECTED" ? (reason ?? "NONE") : "NONE")
    this.changed()
    if (url === null) return { template, delivery: null }
    const payload = templateStatusPayload({
      waba_id: template.waba_id,
      event: status,
      name: template.name,
      language: template.language,
      reason: reason ?? "NONE",
      template_id: Number(template.id),
      category: template.category
    })
    const notification = await this.post("template_status", payload, { wamid: null, status: null }, url)
    return { template, delivery: notification.delivery }
  }

  /**
   * Meta's recategorisation of a template: sets the `category` (`MARKETING`, `UTILITY` or
   * `AUTHENTICATION`) of the template named by `id`, or by `name` and `language`, in
   * `waba_id` (default the first number's), then posts the signed `template_category_update`
   * (`message_template_id`, name, language, `previous_category`, `new_category`) to
   * `webhook_url` or the `webhookUrl` setting (`notify: false`: nothing posted). Answers the
   * template as it now is, the previous category and the delivery (`null` when not posted).
   * Throws, changing nothing, on an unknown template, a bad or unchanged category, or no
   * webhook URL to post to.
   */
  async setTemplateCategory(
    options: Partial<TemplateReference> & { readonly category: string; readonly notify?: boolean; readonly webhook_url?: string }
  ): Promise<{ readonly template: SimulatedTemplate; readonly previous_category: string; readonly delivery: WebhookDelivery | null }> {
    const category = typeof options.category === "string" ? options.category.toUpperCase() : ""
    if (!TEMPLATE_CATEGORIES.includes(category)) throw new TypeError(`category must be one of ${TEMPLATE_CATEGORIES.join(", ")}`)
    const found = this.templates.find({ ...options, waba_id: this.requireAccount(options.waba_id) })
    if (found.category === category) throw new TypeError(`the template is already ${category}`)
    const url = this.notificationUrl(options)
    const template = this.templates.setCategory(found.id, category)
    this.changed()
    if (url === null) return { template, previous_category: found.category, delivery: null }
    const payload = templateCategoryPayload({
      waba_id: template.waba_id,
      template_id: Number(template.id),
      name: template.name,
      language: template.language,
      previous_category: found.category,
      new_category: category
    })
    const notification = await this.post("template_category", payload, { wamid: null, status: null }, url)
    return { template, previous_category: found.category, delivery: notification.delivery }
  }

  /**
   * Forgets what was received and posted (the customers' messages a read receipt may name
   * too), every scripted rule (recipients, sequences,
   * share, default answer: back to `delayMs`), every media and every template (with the
   * names deletions block); keeps the numbers and the settings.
   */
  reset(): void {
    // A notification already being posted is not recorded, nor are its later steps posted.
    this.generation++
    this.receivedList.length = 0
    this.notificationList.length = 0
    this.inboundByWamid.clear()
    this.script.clear()
    this.media.clear()
    this.templates.clear()
    this.restoreDefault()
    for (const timer of this.timers) clearTimeout(timer)
    this.timers.clear()
  }

  /** Stops listening, ends open (hanging) connections and cancels pending notifications. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    for (const timer of this.timers) clearTimeout(timer)
    this.timers.clear()
    this.media.close()
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve())
      this.server.closeAllConnections()
    })
  }

  private restoreDefault(): void {
    if ((this.options.delayMs ?? 0) > 0) this.script.setDefault({ delay_ms: this.options.delayMs! })
  }

  /** `waba_id` when a number is on that account (else the first number's account); throws otherwise. */
  private requireAccount(waba_id: string | undefined): string {
    if (waba_id === undefined) return this.requireNumber(undefined).waba_id
    if (typeof waba_id !== "string" || !/^\d+$/.test(waba_id)) throw new TypeError("waba_id must be digits")
    if (!this.numbers().some((number) => number.waba_id === waba_id)) throw new Error(`no number is configured on the WhatsApp Business Account ${waba_id}`)
    return waba_id
  }

  /**
   * Where a template update is posted: `webhook_url`, else the `webhookUrl` setting; `null`
   * with `notify: false`. Throws when it should post and has nowhere to.
   */
  private notificationUrl(options: { readonly notify?: boolean; readonly webhook_url?: string }): string | null {
    if (options.notify === false) return null
    if (options.webhook_url !== undefined && !(typeof options.webhook_url === "string" && /^https?:\/\//.test(options.webhook_url))) {
      throw new TypeError("webhook_url must be an http(s) URL")
    }
    const url = options.webhook_url ?? this.current.webhookUrl
    if (url === null) throw new Error("no webhook URL is set (webhookUrl, --webhook-url): set one, give webhook_url, or pass notify: false")
    return url
  }

  private requireNumber(phoneNumberId: string | undefined): SimulatedNumber {
    const number = phoneNumberId === undefined ? this.numbers()[0] : this.number(phoneNumberId)
    if (number === undefined) throw new Error(phoneNumberId === undefined ? "no number is configured" : `no number ${phoneNumberId} is configured`)
    return number
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at_ms = preciseNow()
    const request = await readRequest(req, this)
    if (request.path.startsWith("/_simulator")) return handleControl(this, request, req, res)
    const entry: Received = {
      seq: this.receivedList.length + 1,
      at_ms,
      method: request.method,
      path: request.url,
      route: request.route,
      phone_number_id: request.phoneNumberId,
      authorization: req.headers.authorization ?? null,
      body: request.body,
      answer: null,
      wamid: null
    }
    this.receivedList.push(entry)
    this.changed()
    const outcome = await answerGraph(this, request, req, res)
    if (outcome.body !== undefined) entry.body = outcome.body
    entry.answer = outcome.answer
    entry.wamid = outcome.wamid
    this.options.onEvent?.({ event: "graph_request", method: entry.method, path: entry.path, answer: entry.answer, wamid: entry.wamid })
    this.changed()
    if (outcome.wamid !== null && outcome.recipient !== null) this.scheduleStatuses(request.phoneNumberId!, outcome.wamid, outcome)
  }

  private scheduleStatuses(
    phoneNumberId: string,
    wamid: string,
    outcome: { readonly recipient: string | null; readonly scripted: Answer; readonly callbackData: string | null; readonly category: string }
  ): void {
    const { scripted } = outcome
    const steps = scripted.statuses ?? (scripted.failure !== undefined ? ["failed" as const] : this.current.statuses)
    if (this.current.webhookUrl === null || steps.length === 0) return
    const number = this.numbersById.get(phoneNumberId)!
    const failure = scripted.failure ?? { code: 131000 }
    const errors = [statusError(failure.code, failure.title ?? errorTitle(failure.code), failure.details)].map((error) => ({
      ...error,
      message: failure.message ?? error.message
    }))
    const generation = this.generation
    const postStep = (index: number): void => {
      if (index >= steps.length || this.closed || generation !== this.generation) return
      const timer = setTimeout(() => {
        this.timers.delete(timer)
        const status = steps[index]!
        const payload = statusPayload({
          number,
          wamid,
          status,
          recipient_id: outcome.recipient!,
          biz_opaque_callback_data: outcome.callbackData,
          category: outcome.category,
          ...(status === "failed" ? { errors } : {})
        })
        void this.post("status", payload, { wamid, status }).then(() => postStep(index + 1))
      }, this.current.statusDelayMs)
      this.timers.add(timer)
    }
    postStep(0)
  }

  private async post(
    kind: Notification["kind"],
    payload: unknown,
    about: Pick<Notification, "wamid" | "status">,
    url: string | null = this.current.webhookUrl
  ): Promise<Notification> {
    if (url === null) throw new Error("no webhook URL is set (webhookUrl, --webhook-url)")
    const body = JSON.stringify(payload)
    const at_ms = preciseNow()
    const generation = this.generation
    const delivery = await postWebhook(url, body, this.current.appSecret)
    const notification: Notification = { seq: this.notificationList.length + 1, at_ms, kind, url, body, ...about, delivery }
    // Posted across a reset: answered to its caller, not recorded.
    if (generation !== this.generation) return notification
    this.notificationList.push(notification)
    this.options.onEvent?.({ event: "webhook_posted", kind, url, wamid: about.wamid, status: about.status, answered: delivery.status, error: delivery.error })
    this.changed()
    return notification
  }

  private changed(): void {
    this.events.emit("change")
  }
}
