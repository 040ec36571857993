import { Context, Layer } from "effect"
import type { MediaServiceShape } from "@switchboard/core"

/**
 * What the handler was configured with that routes need at run time, beyond core's
 * services: for now the WhatsApp webhook's secrets (docs/whatsapp-webhooks.md).
 *
 * @category handler
 */
export interface HandlerSettingsService {
  readonly whatsapp: {
    /** App secrets a webhook signature may be made with (several while one is rotated). Empty: every webhook POST is refused. */
    readonly appSecrets: ReadonlyArray<string>
    /** The verify token of the subscription handshake; `undefined`: every handshake is refused. */
    readonly verifyToken: string | undefined
  }
}

/**
 * Tag of the {@link HandlerSettingsService}, provided by the handler's runtime from
 * `HandlerOptions.whatsapp`.
 *
 * @category handler
 */
export class HandlerSettings extends Context.Tag("@switchboard/http-adapter/HandlerSettings")<
  HandlerSettings,
  HandlerSettingsService
>() {}

/**
 * The WhatsApp options of a handler: `appSecret` one secret, several, or a comma-separated
 * list (`WHATSAPP_APP_SECRET` may hold several so the secret can be rotated); `verifyToken`
 * the token Meta's dashboard sends in the subscription handshake.
 *
 * @category handler
 */
export interface WhatsAppWebhookOptions {
  readonly appSecret?: string | ReadonlyArray<string> | undefined
  readonly verifyToken?: string | undefined
}

/** The {@link HandlerSettings} layer of a handler's options. */
export const handlerSettingsLayer = (whatsapp: WhatsAppWebhookOptions = {}): Layer.Layer<HandlerSettings> =>
  Layer.succeed(HandlerSettings, {
    whatsapp: {
      appSecrets: (typeof whatsapp.appSecret === "string" ? whatsapp.appSecret.split(",") : (whatsapp.appSecret ?? []))
        .map((secret) => secret.trim())
        .filter((secret) => secret !== ""),
      verifyToken: whatsapp.verifyToken === "" ? undefined : whatsapp.verifyToken
    }
  })

/**
 * The media of a handler (docs/media.md): the {@link MediaServiceShape} over the handler's
 * blob store (`HandlerOptions.media`), or `undefined` when none is configured (the media
 * routes then answer 503 `media_not_configured`), and `publicBaseUrl`, the origin signed
 * links are built on (else the request's).
 *
 * @category settings
 */
export interface HandlerMediaService {
  readonly media: MediaServiceShape | undefined
  readonly publicBaseUrl: string | undefined
}

/**
 * Tag of the {@link HandlerMediaService}; its default is no media.
 *
 * @category settings
 */
export class HandlerMedia extends Context.Reference<HandlerMedia>()("@switchboard/http-adapter/HandlerMedia", {
  defaultValue: (): HandlerMediaService => ({ media: undefined, publicBaseUrl: undefined })
}) {}
