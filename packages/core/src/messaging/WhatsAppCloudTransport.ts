import { randomUUID } from "node:crypto"
import { Readable } from "node:stream"
import { Effect, Either, Layer } from "effect"
import {
  DEFAULT_GRAPH_TIMEOUT_MS,
  graphAnsweredStatus,
  type GraphApiOptions,
  graphSignal,
  graphUnreachable,
  graphUrl,
  networkErrorCode
} from "../channels/graphApi.js"
import {
  type ExtendedMessageType,
  type MediaUpload,
  MessageTransport,
  type MessageTransportService,
  type OutboundChannel,
  sendsType,
  sendWithPromise,
  TransportFailed,
  transportKindOf,
  type OutboundMessage,
  type ReadReceiptOptions,
  type TransportReceipt
} from "./MessageTransport.js"

/**
 * Options of the WhatsApp Cloud API transport.
 * - `phoneNumberId`: the business phone number id that sends;
 * - `accessToken`: the Graph API access token (sent as `Authorization: Bearer`, never logged);
 * - `baseUrl`: default `https://graph.facebook.com`; `apiVersion`: default `v21.0`;
 * - `timeoutMs`: per request, default 10 000 ms.
 *
 * @category messaging
 */
export interface WhatsAppCloudOptions extends GraphApiOptions {
  readonly phoneNumberId: string
  readonly accessToken: string
}

/**
 * A {@link MessageTransport} that posts to the Graph API messages endpoint
 * (`POST {baseUrl}/{apiVersion}/{phoneNumberId}/messages`). A message with a `channel`
 * goes out through that channel's `phone_number_id` with its token instead (the
 * organization's own number, docs/messaging.md "Channels"). It sends every message type,
 * interactive ones included (`messageTypes`). A 2xx answer gives the
 * provider's message id (`messages[0].id`); any other answer, a timeout or a network error
 * fails with `TransportFailed` carrying the provider's `error.message` and `error.code`, the
 * HTTP status and the socket error's code, from which `classifyFailure` tells the classes
 * apart (docs/messaging.md "Classes of failure"). Each body carries the message's uuid as
 * `biz_opaque_callback_data`.
 *
 * @category messaging
 * @example
 * import { WhatsAppCloudTransport } from "@switchboard/core"
 * const transport = WhatsAppCloudTransport.layer({ phoneNumberId: "1234", accessToken: process.env.WA_TOKEN! })
 */
export const layer = (options: WhatsAppCloudOptions): Layer.Layer<MessageTransport> =>
  Layer.effect(
    MessageTransport,
    Effect.as(httpClientSettled, {
      send: sendWithPromise(
        (message) => send(message.channel === null ? options : channelOptions(options, message.channel), message),
        (message) => sendPromise(message.channel === null ? options : channelOptions(options, message.channel), message)
      ),
      uploadMedia: (channel, upload) => uploadMedia(channel === null ? options : channelOptions(options, channel), upload),
      markRead: (channel, providerMessageId, readOptions) => markRead(channelOptions(options, channel), providerMessageId, readOptions),
      kind: "whatsapp" as const,
      messageTypes: WHATSAPP_MESSAGE_TYPES
    } satisfies MessageTransportService)
  )

/**
 * {@link withChannels} as a Layer, built once the transport's HTTP client is settled (as
 * {@link layer} is): the handler's default transport (docs/messaging.md "Transports").
 *
 * @category messaging
 */
export const withChannelsLayer = (options: GraphApiOptions, fallback: MessageTransportService): Layer.Layer<MessageTransport> =>
  Layer.effect(MessageTransport, Effect.as(httpClientSettled, withChannels(options, fallback)))

/**
 * A transport that sends the messages with a `channel` through the Graph API with that
 * channel's number and token (`options` says where the Graph API is), and hands the
 * others to `fallback` (for example the recording transport): an organization without
 * a channel keeps the deployment's default (docs/messaging.md "Transports"). Its `kind`
 * answers per message: `whatsapp` with a channel, else the fallback's kind (`custom` when
 * the fallback says none).
 *
 * @category messaging
 */
export const withChannels = (options: GraphApiOptions, fallback: MessageTransportService): MessageTransportService => {
  preloadUndici()
  const fallbackPromise = fallback.send.promise
  const routedSend = (message: OutboundMessage) =>
    message.channel === null ? fallback.send(message) : send(channelOptions(options, message.channel), message)
  return {
    // As a promise too when the fallback's send has one (the recording transport's does).
    send: fallbackPromise === undefined
      ? routedSend
      : sendWithPromise(routedSend, (message) =>
        message.channel === null ? fallbackPromise(message) : sendPromise(channelOptions(options, message.channel), message)),
    uploadMedia: (channel, upload) =>
      channel !== null
        ? uploadMedia(channelOptions(options, channel), upload)
        : fallback.uploadMedia !== undefined
          ? fallback.uploadMedia(null, upload)
          : Effect.sync(() => upload.stream.destroy()).pipe(
              Effect.zipRight(Effect.fail(new TransportFailed({ reason: "This transport cannot upload files", provider_code: null, kind: "permanent" })))
            ),
    markRead: (channel, providerMessageId, readOptions) => markRead(channelOptions(options, channel), providerMessageId, readOptions),
    ...(fallback.immediate === true ? { immediate: true } : {}),
    kind: (route) => (route.channel === null ? transportKindOf(fallback, route) : "whatsapp"),
    messageTypes: (route) =>
      route.channel !== null
        ? WHATSAPP_MESSAGE_TYPES
        : WHATSAPP_MESSAGE_TYPES.filter((type) => sendsType(fallback, type, route))
  }
}

/** The {@link ExtendedMessageType}s the Graph API transport sends: all of them. */
const WHATSAPP_MESSAGE_TYPES: ReadonlyArray<ExtendedMessageType> = ["interactive", "reaction"]

const channelOptions = (options: GraphApiOptions, channel: OutboundChannel): WhatsAppCloudOptions => ({
  ...(options.baseUrl === undefined ? {} : { baseUrl: options.baseUrl }),
  ...(options.apiVersion === undefined ? {} : { apiVersion: options.apiVersion }),
  ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  phoneNumberId: channel.phone_number_id,
  accessToken: channel.access_token
})

/**
 * The Graph API request body of one outbound message: `{messaging_product: "whatsapp",
 * recipient_type: "individual", to, biz_opaque_callback_data, type, …}` where `to` is the
 * E.164 phone without `+` and `biz_opaque_callback_data` the message's uuid (`message_id`),
 * which Meta echoes in the message's status notifications (docs/messaging.md "WhatsApp Cloud API").
 *
 * @category messaging
 */
export const requestBody = (message: OutboundMessage): Record<string, unknown> => {
  const base = {
    messaging_product: "whatsapp",
    recipient_type: "individual",
    to: message.to.replace(/^\+/, ""),
    biz_opaque_callback_data: message.message_id
  }
  switch (message.type) {
    case "text":
      return { ...base, type: "text", text: { preview_url: false, body: message.text } }
    case "template":
      return { ...base, type: "template", template: message.template }
    case "media": {
      const { type, url, id, caption, filename } = message.media
      const media: Record<string, string> = id === undefined ? { link: url } : { id }
      if (caption !== undefined && type !== "audio") media.caption = caption
      if (filename !== undefined && type === "document") media.filename = filename
      return { ...base, type, [type]: media }
    }
    case "interactive":
      return { ...base, type: "interactive", interactive: message.interactive }
    case "reaction":
      return { ...base, type: "reaction", reaction: { message_id: message.reaction.message_id, emoji: message.reaction.emoji } }
  }
}

/**
 * One `POST …/messages`, through undici's `request` where it loads (Node, Bun, Deno), on
 * its global dispatcher (keep-alive connections per origin), else through `fetch`. undici's
 * `request` costs about a third of `fetch`'s CPU time per message (docs/benchmarks.md
 * "Outbound dispatch"), which matters at a channel's full throughput; it is imported on
 * first use, so a runtime without it (an edge runtime) loads this module and keeps `fetch`.
 * The request's timeout is `timeoutMs`: undici's own (`headersTimeout`, `bodyTimeout`: no
 * timer of ours per request), or `fetch`'s abort signal. An interruption of the calling
 * fiber does not abort an undici request (the send queue never interrupts a request it
 * made, docs/messaging.md "Classes of failure"): it ends by its answer or its timeout.
 */
const send = (options: WhatsAppCloudOptions, message: OutboundMessage): Effect.Effect<TransportReceipt, TransportFailed> =>
  Effect.flatMap(postMessages(options, JSON.stringify(requestBody(message))), (answered) => receiptOf(options, answered))

/**
 * {@link send} as a promise (`SendFunction.promise`): the receipt, or a
 * rejection with `TransportFailed`. The same request through undici once it has loaded
 * (the Layers wait for that), else through {@link send}.
 */
const sendPromise = (options: WhatsAppCloudOptions, message: OutboundMessage): Promise<TransportReceipt> => {
  if (undiciState === undefined || undiciState === null) return Effect.runPromise(Effect.either(send(options, message))).then(Either.getOrThrowWith((failed) => failed))
  return postViaUndici(undiciState, options, JSON.stringify(requestBody(message))).then((answered) => {
    const receipt = answeredReceipt(options, answered)
    if (receipt instanceof TransportFailed) throw receipt
    return receipt
  })
}

/**
 * One `POST …/{phone_number_id}/messages` of `body` (JSON text), as {@link send} describes:
 * the answer's status and JSON body, or `TransportFailed` when no answer came.
 */
const postMessages = (options: WhatsAppCloudOptions, body: string): Effect.Effect<GraphAnswer, TransportFailed> => {
  const { url, headers } = messagesRequest(options)
  const viaUndici = (request: UndiciRequest) =>
    Effect.tryPromise({ try: () => postViaUndici(request, options, body), catch: (error) => (error instanceof TransportFailed ? error : unreachable(options, error)) })
  const viaFetch = () => Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, { method: "POST", headers, body, signal: graphSignal(options, signal) })
      return { status: response.status, ...(await readBody(response)) }
    },
    catch: (error) => unreachable(options, error)
  })
  // Until undici has loaded (its import takes 200–300 ms of CPU, more on a busy machine),
  // sends go through fetch: a send never waits for the import.
  if (undiciState === undefined) preloadUndici()
  return undiciState === undefined || undiciState === null ? viaFetch() : viaUndici(undiciState)
}

/** The address, time limit (ms) and headers of a `POST …/{phone_number_id}/messages` of `options`. */
const messagesRequest = (options: WhatsAppCloudOptions) => ({
  url: graphUrl(options, options.phoneNumberId, "messages"),
  timeoutMs: options.timeoutMs ?? DEFAULT_GRAPH_TIMEOUT_MS,
  headers: { authorization: `Bearer ${options.accessToken}`, "content-type": "application/json" }
})

/**
 * One `POST …/{phone_number_id}/messages` of `body` through undici's `request`: the answer's
 * status and JSON body; rejects with `TransportFailed` when no answer came (undici's own
 * `headersTimeout` and `bodyTimeout` bound it: it always settles).
 */
const postViaUndici = async (request: UndiciRequest, options: WhatsAppCloudOptions, body: string): Promise<GraphAnswer> => {
  const { url, timeoutMs, headers } = messagesRequest(options)
  let response
  try {
    response = await request(url, { method: "POST", headers, body, headersTimeout: timeoutMs, bodyTimeout: timeoutMs })
  } catch (error) {
    throw unreachable(options, error)
  }
  return { status: response.statusCode, ...(await readBody(response.body)) }
}

/**
 * The Graph API request body of a read receipt (docs/chats.md "Read receipts"):
 * `{messaging_product: "whatsapp", status: "read", message_id}`, plus
 * `typing_indicator: {type: "text"}` when `typing` is asked.
 *
 * @category messaging
 */
export const readReceiptBody = (providerMessageId: string, options: ReadReceiptOptions): Record<string, unknown> => ({
  messaging_product: "whatsapp",
  status: "read",
  message_id: providerMessageId,
  ...(options.typing ? { typing_indicator: { type: "text" } } : {})
})

/**
 * A read receipt: one `POST …/{phone_number_id}/messages` of {@link readReceiptBody}
 * within the transport's timeout. Meta's `{success: true}` is success; any other answer, a
 * timeout or a network error is `TransportFailed` as a send's is.
 */
const markRead = (options: WhatsAppCloudOptions, providerMessageId: string, readOptions: ReadReceiptOptions): Effect.Effect<void, TransportFailed> =>
  Effect.flatMap(postMessages(options, JSON.stringify(readReceiptBody(providerMessageId, readOptions))), (answered) =>
    isOk(answered) && answered.body.success === true ? Effect.void : Effect.fail(answeredFailure(options, answered))
  )

type UndiciRequest = typeof import("undici").request

/** undici's `request` once imported (`null`: it does not load here, `fetch` is used; `undefined`: not tried yet). */
let undiciState: UndiciRequest | null | undefined
let undiciLoading: Promise<UndiciRequest | null> | undefined

/**
 * Starts importing undici when a transport is made: the import takes a while (200–300 ms
 * of CPU, more on a loaded machine). Awaited at a send, it delayed the request after its
 * pacing slot was checked and could run past a short timeout; sends made before it ends
 * go through `fetch` instead.
 */
const preloadUndici = (): void => void loadUndici()

/**
 * Resolves once the transport's HTTP client is settled: `"undici"` (its `request` loaded)
 * or `"fetch"` (undici does not load here). The Layers ({@link layer},
 * {@link withChannelsLayer}) are built after it; a transport made with {@link withChannels}
 * sends through `fetch` until then, and a host using it that wants every send through
 * undici from the first awaits this before serving (docs/messaging.md "WhatsApp Cloud API").
 *
 * @category messaging
 */
export const httpClientReady = (): Promise<"undici" | "fetch"> =>
  loadUndici().then((request) => (request === null ? "fetch" : "undici"))

/**
 * Waits until undici's import has ended (loaded or not), starting it if need be. The
 * transport's Layers are built after it: the import's 200–300 ms of CPU then run before
 * the first send instead of beside a dispatcher's first sends, where it held hand-overs
 * that had passed their pacing check, and Meta received them together (docs/benchmarks.md
 * "The first second of a dispatch").
 */
const httpClientSettled: Effect.Effect<void> = Effect.asVoid(Effect.promise(() => loadUndici()))

/** Imports undici's `request` once; `null` where it does not load. */
const loadUndici = (): Promise<UndiciRequest | null> =>
  (undiciLoading ??= import("undici").then(
    (undici) => (undiciState = undici.request),
    () => (undiciState = null)
  ))

/** A request that got no answer: the socket error's code goes with it (a timeout is `TimeoutError`). */
const unreachable = (options: WhatsAppCloudOptions, error: unknown): TransportFailed =>
  new TransportFailed({ reason: graphUnreachable(options, error), provider_code: null, http_status: null, network_error: networkErrorCode(error) })

/** The answer's JSON body, or the error that cut reading it short (a lost connection, the timeout). */
const readBody = async (body: { readonly text: () => Promise<string> }): Promise<{ readonly body: GraphResponse; readonly readError?: unknown }> => {
  try {
    return { body: parseJsonObject(await body.text()) }
  } catch (readError) {
    return { body: {}, readError }
  }
}

const parseJsonObject = (text: string): GraphResponse => {
  try {
    const parsed: unknown = JSON.parse(text)
    return typeof parsed === "object" && parsed !== null ? (parsed as GraphResponse) : {}
  } catch {
    return {}
  }
}

/**
 * The receipt of a 2xx answer with `messages[0].id`; otherwise {@link answeredFailure}.
 */
const receiptOf = (options: WhatsAppCloudOptions, answer: GraphAnswer): Effect.Effect<TransportReceipt, TransportFailed> => {
  const receipt = answeredReceipt(options, answer)
  return receipt instanceof TransportFailed ? Effect.fail(receipt) : Effect.succeed(receipt)
}

/** {@link receiptOf} as a value: the receipt of a 2xx answer with a message id, else its `TransportFailed`. */
const answeredReceipt = (options: WhatsAppCloudOptions, answer: GraphAnswer): TransportReceipt | TransportFailed => {
  const id = answer.body.messages?.[0]?.id
  if (isOk(answer) && typeof id === "string") return { provider_message_id: id, status: "sent" }
  return answeredFailure(options, answer)
}

/**
 * `TransportFailed` of an answer that is not the success asked for: Meta's message and code,
 * the HTTP status, and the network error when the body was cut short. A 2xx answer without
 * what was asked for (or whose body was lost) is `unknown`: Meta may have done it.
 */
const answeredFailure = (options: WhatsAppCloudOptions, answer: GraphAnswer): TransportFailed => {
  const { status, body, readError } = answer
  const { code, message } = body.error ?? {}
  return new TransportFailed({
    reason: typeof message === "string" ? message : graphAnsweredStatus(options, status),
    provider_code: typeof code === "number" || typeof code === "string" ? String(code) : null,
    http_status: status,
    network_error: readError === undefined ? null : networkErrorCode(readError),
    ...(isOk(answer) ? { kind: "unknown" as const } : {})
  })
}

const isOk = (answer: GraphAnswer): boolean => answer.status >= 200 && answer.status <= 299

interface GraphAnswer {
  readonly status: number
  readonly body: GraphResponse
  readonly readError?: unknown
}

interface GraphResponse {
  readonly id?: unknown
  readonly success?: unknown
  readonly messages?: ReadonlyArray<{ readonly id?: unknown }>
  readonly error?: { readonly message?: unknown; readonly code?: unknown }
}

/**
 * How long one upload may take, in ms: without a byte of answer (`headersTimeout`) or
 * with the body stalled (`bodyTimeout`).
 *
 * @category messaging
 */
export const UPLOAD_TIMEOUT_MS = 120_000

/**
 * One `POST …/{phone_number_id}/media` (docs/media.md "Sending a stored file"): a
 * `multipart/form-data` body of `messaging_product=whatsapp`, `type` (the MIME type) and
 * `file`, the file streamed from `upload.stream` with the exact `Content-Length`, through
 * undici's `request` (or `fetch`, chunked, where undici does not load), within
 * {@link UPLOAD_TIMEOUT_MS}. Meta's `{id}` is the media id; any other answer, a timeout or a
 * network error is `TransportFailed` as a send's is.
 */
const uploadMedia = (options: WhatsAppCloudOptions, upload: MediaUpload): Effect.Effect<{ readonly provider_media_id: string }, TransportFailed> => {
  const url = graphUrl(options, options.phoneNumberId, "media")
  const boundary = `switchboard-${randomUUID()}`
  const mime = upload.mimeType.replace(/[\r\n]/g, "")
  const filename = (upload.filename ?? "file").replace(/[\r\n"\\]/g, "_")
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="messaging_product"\r\n\r\nwhatsapp\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="type"\r\n\r\n${mime}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ${mime}\r\n\r\n`
  )
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
  async function* parts(): AsyncGenerator<Uint8Array> {
    yield head
    for await (const chunk of upload.stream) yield chunk as Uint8Array
    yield tail
  }
  const headers = {
    authorization: `Bearer ${options.accessToken}`,
    "content-type": `multipart/form-data; boundary=${boundary}`
  }
  const answer = Effect.tryPromise({
    try: async (signal): Promise<GraphAnswer> => {
      const request = await loadUndici()
      if (request !== null) {
        const response = await request(url, {
          method: "POST",
          headers: { ...headers, "content-length": String(head.length + upload.size + tail.length) },
          body: Readable.from(parts()),
          headersTimeout: UPLOAD_TIMEOUT_MS,
          bodyTimeout: UPLOAD_TIMEOUT_MS
        })
        return { status: response.statusCode, ...(await readBody(response.body)) }
      }
      const response = await fetch(url, {
        method: "POST",
        headers,
        body: Readable.toWeb(Readable.from(parts())) as ReadableStream<Uint8Array>,
        duplex: "half",
        signal: AbortSignal.any([signal, AbortSignal.timeout(UPLOAD_TIMEOUT_MS)])
      } as RequestInit)
      return { status: response.status, ...(await readBody(response)) }
    },
    catch: (error) => unreachable(options, error)
  })
  return Effect.ensuring(
    Effect.flatMap(answer, (answered) =>
      isOk(answered) && typeof answered.body.id === "string"
        ? Effect.succeed({ provider_media_id: answered.body.id })
        : Effect.fail(answeredFailure(options, answered))
    ),
    Effect.sync(() => upload.stream.destroy())
  )
}
