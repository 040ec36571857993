import { afterAll, afterEach, beforeAll, expect } from "vitest"
import { Effect, type Layer } from "effect"
import { Core, type Storage, Templates, type TemplateInput } from "@switchboard/core"
import type { DispatchSwitches, SwitchboardHandler } from "@switchboard/http-adapter"
import { sign, startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"
import { makeHandler, makeSharedStorage, makeTenant, request, type ApiClient } from "./helpers.js"

// What the send queue's HTTP tests share (send-queue.test.ts, customer-service-window.test.ts):
// the WhatsApp simulator as the one Graph API, handlers with a channel on it and the
// order_update template, signed provider webhooks, and polling a message until it settles.
// The send queue's delays are milliseconds so whole schedules run in a test: retries after
// 50 ms, an attempt times out after 400 ms, an unknown outcome settles for 300 ms.

/** The handlers' secret key (channel tokens are sealed under it). */
export const SECRET_KEY = Buffer.alloc(32, 9).toString("base64")
/** The send queue's settings of every handler here (milliseconds). */
export const SEND_QUEUE = { retryDelaysMs: [50, 50, 50], timeoutMs: 400, settleMs: 300, pollIntervalMs: 50 }
const TOKEN = "EAAGsendqueuetoken00000000000001"

/** The template every tenant of {@link useSendQueueSetup} has. */
export const orderUpdate: TemplateInput = {
  name: "order_update",
  language: "en_US",
  category: "UTILITY",
  status: "APPROVED",
  components: [{ type: "BODY", text: "Order {{1}} has shipped.", example: { body_text: [["#1234"]] } }]
}

/** The send object of order_update for order `order`. */
export const template = (order: string) => ({
  name: "order_update",
  language: { code: "en_US" },
  components: [{ type: "body", parameters: [{ type: "text", text: order }] }]
})

/**
 * Registers the file's simulator (started before its tests, its script cleared after each
 * one so a failed test leaves no answer for the next, closed with every handler after the
 * last) and answers what the tests use: `simulator()`, `setup()` (a fresh store, handler and
 * tenant with one channel — a new number of the simulator, `throughputMps` default 1 000 —
 * and order_update, with its `apiKey`; `dispatch` as `createHandler`'s), `postWebhook(setup, body)` (a body signed with the app secret),
 * `requestsFor(setup, id)` (the Graph sends that carried message `id`), and
 * `messageWhen(api, id, done)` (polls `GET /messages/{id}` until `done`, at most `waitMs`).
 * `numberBase` keeps each file's phone_number_ids apart; `timeoutMs` replaces {@link SEND_QUEUE}'s 400 ms.
 */
export const useSendQueueSetup = (options: { readonly appSecret: string; readonly numberBase: number; readonly waitMs?: number; readonly timeoutMs?: number }) => {
  let simulator: WhatsAppSimulator | undefined
  const handlers: Array<SwitchboardHandler> = []
  beforeAll(async () => {
    simulator = await startSimulator()
  })
  afterEach(() => simulator?.script.clear())
  afterAll(async () => {
    await Promise.all(handlers.map((handler) => handler.dispose()))
    await simulator?.close()
  })
  const running = (): WhatsAppSimulator => {
    if (simulator === undefined) throw new Error("the simulator is not started (use it inside a test)")
    return simulator
  }

  let numbers = 0
  const setup = async (
    setupOptions: { readonly throughputMps?: number; readonly storage?: Layer.Layer<Storage>; readonly dispatch?: DispatchSwitches } = {}
  ) => {
    const storage = setupOptions.storage ?? makeSharedStorage()
    const handler = makeHandler(storage, {
      secretKey: SECRET_KEY,
      graphApi: { baseUrl: running().url, apiVersion: "v21.0" },
      whatsapp: { appSecret: options.appSecret },
      sendQueue: options.timeoutMs === undefined ? SEND_QUEUE : { ...SEND_QUEUE, timeoutMs: options.timeoutMs },
      ...(setupOptions.dispatch === undefined ? {} : { dispatch: setupOptions.dispatch })
    })
    handlers.push(handler)
    const { organization, api, apiKey } = await makeTenant(storage, handler)
    const number = {
      phone_number_id: String(options.numberBase + ++numbers),
      display_phone_number: "+31 6 1234 5678",
      waba_id: "102290129340398",
      access_token: TOKEN
    }
    running().addNumber(number)
    const channel = await api.post("/channels", {
      phone_number_id: number.phone_number_id,
      waba_id: number.waba_id,
      access_token: TOKEN,
      throughput_mps: setupOptions.throughputMps ?? 1000
    })
    expect(channel.status).toBe(200)
    await Effect.runPromise(
      Effect.flatMap(Templates, (templates) => templates.create(organization.id, orderUpdate)).pipe(
        Effect.provide(Core.layer),
        Effect.provide(storage)
      )
    )
    return { handler, api, apiKey, organization, number, channelId: channel.data.uuid as string, storage }
  }

  type Setup = Awaited<ReturnType<typeof setup>>

  const postWebhook = async (setupOf: Setup, body: string) => {
    const response = await request(setupOf.handler, {
      method: "POST",
      url: "/api/v1/api/webhooks/whatsapp",
      headers: { "content-type": "application/json", "x-hub-signature-256": sign(body, options.appSecret) },
      payload: body
    })
    expect(response.statusCode).toBe(200)
  }

  const requestsFor = (setupOf: Setup, id: string) =>
    running()
      .sends(setupOf.number.phone_number_id)
      .filter((each) => (each.body as { biz_opaque_callback_data?: string }).biz_opaque_callback_data === id)

  const messageWhen = async (api: ApiClient, id: string, done: (message: Record<string, any>) => boolean) => {
    const deadline = Date.now() + (options.waitMs ?? 5_000)
    for (;;) {
      const message = (await api.get(`/messages/${id}`)).data as Record<string, any>
      if (done(message)) return message
      if (Date.now() > deadline) throw new Error(`message ${id} never reached the expected state: ${JSON.stringify(message)}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  return { simulator: running, setup, postWebhook, requestsFor, messageWhen }
}
