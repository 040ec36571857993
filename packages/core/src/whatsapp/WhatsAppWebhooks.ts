import { Context, Effect, Layer, Option } from "effect"
import { Channels } from "../channels/Channels.js"
import type { ChannelOwner } from "../channels/model.js"
import { Chats } from "../chats/Chats.js"
import type { InboundMessageInput } from "../chats/model.js"
import type { InvalidInput } from "../errors.js"
import { MAX_NAME_LENGTH } from "../internal/validation.js"
import { Messaging } from "../messaging/Messaging.js"
import type { OrganizationId } from "../organizations/model.js"
import type { StorageError } from "../storage/errors.js"
import { Templates } from "../templates/Templates.js"
import {
  readWhatsAppWebhook,
  type WhatsAppInboundMessage,
  type WhatsAppStatusUpdate,
  type WhatsAppWebhookChange
} from "./readWebhook.js"

/**
 * What a webhook delivery changed: `received`, the number of `entry[].changes[]` items
 * processed (routed to an organization and stored); items for an unknown number or
 * WhatsApp Business Account, and fields Switchboard does not handle, are acknowledged
 * but not counted (docs/whatsapp-webhooks.md "What each event does").
 *
 * @category whatsapp
 */
export interface WebhookReceipt {
  readonly received: number
}

/**
 * Stores what a WhatsApp Cloud API webhook says (docs/whatsapp-webhooks.md). The caller
 * has verified its signature: the payload is Meta's.
 *
 * @category services
 */
export interface WhatsAppWebhooksService {
  /**
   * Routes each `messages` change by `metadata.phone_number_id` to its channel's
   * organization and each `message_template_status_update` by `entry[].id` (the channels'
   * `waba_id`), and stores it:
   * - each customer message as an inbound message (`Messaging.receive`: contact and chat
   *   created as needed, named with the WhatsApp profile name, deduplicated by its
   *   `wamid`, answered by a matching basic reply through the same channel); a message
   *   core refuses (for example a sender that is not a phone number) is logged and skipped;
   * - each status on the outbound message with that provider id (`Chats.applyProviderStatus`:
   *   never moves back; `failed` with its error; unknown ids kept 10 minutes);
   * - a template status on the template with that name and language, in every
   *   organization with a channel of that account.
   * An unknown number or account is logged and skipped. Fails only with `StorageError`
   * (then nothing is acknowledged and the provider retries; what was already stored is
   * stored again as a no-op).
   */
  readonly receive: (payload: unknown) => Effect.Effect<WebhookReceipt, StorageError>
}

/**
 * Tag of the {@link WhatsAppWebhooksService}; `WhatsAppWebhooks.layer` needs `Channels`,
 * `Chats`, `Messaging` and `Templates` (`Core.layer` provides it).
 *
 * @category services
 * @example
 * import { Effect } from "effect"
 * import { WhatsAppWebhooks } from "@switchboard/core"
 *
 * const store = (payload: unknown) => Effect.flatMap(WhatsAppWebhooks, (webhooks) => webhooks.receive(payload))
 */
export class WhatsAppWebhooks extends Context.Tag("@switchboard/core/WhatsAppWebhooks")<
  WhatsAppWebhooks,
  WhatsAppWebhooksService
>() {
  static readonly layer: Layer.Layer<WhatsAppWebhooks, never, Channels | Chats | Messaging | Templates> = Layer.effect(
    WhatsAppWebhooks,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const channels = yield* Channels
  const chats = yield* Chats
  const messaging = yield* Messaging
  const templates = yield* Templates

  const receiveMessage = (owner: ChannelOwner, message: WhatsAppInboundMessage) =>
    messaging.receive(owner.organization_id, inboundInputOf(owner, message)).pipe(
      Effect.asVoid,
      Effect.catchTag("InvalidInput", (error) => logSkipped("inbound message", message.provider_message_id, error))
    )

  const applyStatus = (organizationId: OrganizationId, status: WhatsAppStatusUpdate) =>
    chats.applyProviderStatus(organizationId, status.provider_message_id, status.status, status.failure ?? undefined).pipe(
      Effect.asVoid,
      Effect.catchTag("InvalidInput", (error) => logSkipped("status", status.provider_message_id, error))
    )

  /** Stores one change item; whether it was routed to an organization (counted). */
  const receiveChange = (change: WhatsAppWebhookChange): Effect.Effect<boolean, StorageError> => {
    switch (change._tag) {
      case "Ignored":
        return Effect.as(Effect.logDebug("WhatsApp webhook: field not handled").pipe(Effect.annotateLogs({ field: change.field })), false)
      case "Messages":
        return Effect.flatMap(channels.findByPhoneNumberId(change.phone_number_id), (owner) =>
          Option.match(owner, {
            onNone: () =>
              Effect.as(
                Effect.logWarning("WhatsApp webhook for a phone number id no channel has; acknowledged, nothing stored").pipe(
                  Effect.annotateLogs({ phone_number_id: change.phone_number_id })
                ),
                false
              ),
            onSome: (owner) =>
              Effect.gen(function* () {
                for (const message of change.messages) yield* receiveMessage(owner, message)
                for (const status of change.statuses) yield* applyStatus(owner.organization_id, status)
                return true
              })
          })
        )
      case "TemplateStatus":
        return Effect.gen(function* () {
          const owners = yield* channels.findByWabaId(change.waba_id)
          const organizations = [...new Set(owners.map((owner) => owner.organization_id))]
          if (organizations.length === 0) {
            yield* Effect.logWarning("WhatsApp template status for an account no channel has; acknowledged, nothing stored").pipe(
              Effect.annotateLogs({ waba_id: change.waba_id })
            )
            return false
          }
          for (const organizationId of organizations) {
            const updated = yield* templates.applyProviderStatus(organizationId, change)
            if (Option.isNone(updated)) {
              yield* Effect.logInfo("WhatsApp template status for a template this organization does not have").pipe(
                Effect.annotateLogs({ organization_id: organizationId, name: change.name, language: change.language, status: change.status })
              )
            }
          }
          return true
        })
    }
  }

  const receive = Effect.fn("WhatsAppWebhooks.receive")(function* (payload: unknown) {
    const changes = readWhatsAppWebhook(payload)
    if (changes === undefined) {
      yield* Effect.logWarning("Webhook payload is not a WhatsApp Business Account notification; acknowledged, nothing stored")
      return { received: 0 }
    }
    let received = 0
    for (const change of changes) if (yield* receiveChange(change)) received += 1
    const receipt: WebhookReceipt = { received }
    return receipt
  })

  const service: WhatsAppWebhooksService = { receive }
  return service
})

/** One warning for a part of a webhook core refused (what, its provider id, the issues); the rest is stored. */
const logSkipped = (what: string, providerMessageId: string, error: InvalidInput) =>
  Effect.logWarning(`WhatsApp webhook: ${what} skipped`).pipe(
    Effect.annotateLogs({
      provider_message_id: providerMessageId.slice(0, MAX_NAME_LENGTH),
      issues: error.issues.map((issue) => `${issue.field}: ${issue.code}`).join("; ")
    })
  )

/** The `Messaging.receive` input of a customer message that came in through `owner`'s channel. */
const inboundInputOf = (owner: ChannelOwner, message: WhatsAppInboundMessage): InboundMessageInput => ({
  phone: `+${message.from.replace(/^\+/, "")}`,
  type: message.type,
  text: message.text,
  media: message.media,
  content: message.content,
  provider_message_id: message.provider_message_id,
  first_name: message.profile_name?.trim().slice(0, MAX_NAME_LENGTH) ?? null,
  channel_uuid: owner.channel.uuid
})
