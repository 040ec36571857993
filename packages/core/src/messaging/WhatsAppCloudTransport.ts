import { Effect, Layer } from "effect"
import { graphAnsweredStatus, type GraphApiOptions, graphSignal, graphUnreachable, graphUrl } from "./graphApi.js"
import {
  MessageTransport,
  type MessageTransportService,
  TransportFailed,
  type OutboundMessage,
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
 * organization's own number, docs/messaging.md "Channels"). A 2xx answer gives the
 * provider's message id (`messages[0].id`); any other answer, a timeout or a network error
 * fails with `TransportFailed` carrying the provider's `error.message` and `error.code`.
 *
 * @category messaging
 * @example
 * import { WhatsAppCloudTransport } from "@switchboard/core"
 * const transport = WhatsAppCloudTransport.layer({ phoneNumberId: "1234", accessToken: process.env.WA_TOKEN! })
 */
export const layer = (options: WhatsAppCloudOptions): Layer.Layer<MessageTransport> =>
  Layer.succeed(MessageTransport, {
    send: (message) => send(message.channel === null ? options : channelOptions(options, message.channel), message)
  })

/**
 * A transport that sends the messages with a `channel` through the Graph API with that
 * channel's number and token (`options` says where the Graph API is), and hands the
 * others to `fallback` (for example the recording transport): an organization without
 * a channel keeps the deployment's default (docs/messaging.md "Transports").
 *
 * @category messaging
 */
export const withChannels = (options: GraphApiOptions, fallback: MessageTransportService): MessageTransportService => ({
  send: (message) => (message.channel === null ? fallback.send(message) : send(channelOptions(options, message.channel), message))
})

const channelOptions = (
  options: GraphApiOptions,
  channel: NonNullable<OutboundMessage["channel"]>
): WhatsAppCloudOptions => ({
  ...(options.baseUrl === undefined ? {} : { baseUrl: options.baseUrl }),
  ...(options.apiVersion === undefined ? {} : { apiVersion: options.apiVersion }),
  ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  phoneNumberId: channel.phone_number_id,
  accessToken: channel.access_token
})

/** The Graph API request body of one outbound message. */
export const requestBody = (message: OutboundMessage): Record<string, unknown> => {
  const base = { messaging_product: "whatsapp", recipient_type: "individual", to: message.to.replace(/^\+/, "") }
  switch (message.type) {
    case "text":
      return { ...base, type: "text", text: { preview_url: false, body: message.text } }
    case "template":
      return { ...base, type: "template", template: message.template }
    case "media": {
      const { type, url, caption, filename } = message.media
      const media: Record<string, string> = { link: url }
      if (caption !== undefined && type !== "audio") media.caption = caption
      if (filename !== undefined && type === "document") media.filename = filename
      return { ...base, type, [type]: media }
    }
  }
}

const send = (options: WhatsAppCloudOptions, message: OutboundMessage): Effect.Effect<TransportReceipt, TransportFailed> => {
  const url = graphUrl(options, options.phoneNumberId, "messages")
  return Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${options.accessToken}`, "content-type": "application/json" },
        body: JSON.stringify(requestBody(message)),
        signal: graphSignal(options, signal)
      })
      const body = (await response.json().catch(() => ({}))) as GraphResponse
      return { ok: response.ok, status: response.status, body }
    },
    catch: (error) => new TransportFailed({ reason: graphUnreachable(options, error), provider_code: null })
  }).pipe(
    Effect.flatMap(({ ok, status, body }) => {
      const id = body.messages?.[0]?.id
      if (ok && typeof id === "string") return Effect.succeed({ provider_message_id: id, status: "sent" as const })
      return Effect.fail(
        new TransportFailed({
          reason: body.error?.message ?? graphAnsweredStatus(options, status),
          provider_code: body.error?.code === undefined ? null : String(body.error.code)
        })
      )
    })
  )
}

interface GraphResponse {
  readonly messages?: ReadonlyArray<{ readonly id?: unknown }>
  readonly error?: { readonly message?: string; readonly code?: number | string }
}
