import { hash } from "node:crypto"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { Channels } from "../channels/Channels.js"
import type { ChannelOwner } from "../model/channels.js"
import { Chats } from "../chats/Chats.js"
import type { InboundMessageInput } from "../model/chats.js"
import type { InvalidInput } from "../model/commonErrors.js"
import type { OrganizationId } from "../model/organizations.js"
import { Messaging } from "../messaging/Messaging.js"
import { MetricsRecorder } from "../metrics/MetricsRecorder.js"
import type { StorageError } from "../storage/errors.js"
import { Storage } from "../storage/Storage.js"
import { Templates } from "../templates/Templates.js"
import { WEBHOOK_REJECT_ITEM_MAX_CHARS, WEBHOOK_REJECT_RETENTION_MS, type WebhookReject } from "../model/whatsapp.js"
import {
  readWhatsAppWebhook,
  type WhatsAppInboundMessage,
  type WhatsAppWebhookChange
} from "./readWebhook.js"
import { MAX_NAME_LENGTH } from "../model/names.js"

/**
 * What a webhook delivery changed: `received`, the number of `entry[].changes[]` items
 * processed (routed to an organization and stored); items for an unknown number or
 * WhatsApp Business Account, and fields Switchboard does not handle, are acknowledged
 * but not counted (docs/whatsapp-webhooks.md "What each event does"); `organizations`,
 * the organizations its items were routed to, each once, in order.
 *
 * @category whatsapp
 */
export interface WebhookReceipt {
  readonly received: number
  readonly organizations: ReadonlyArray<OrganizationId>
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
   * organization and each `message_template_status_update` and `template_category_update` by `entry[].id` (the channels'
   * `waba_id`), and stores it:
   * - each customer message as an inbound message (`Messaging.receive`: contact and chat
   *   created as needed, named with the WhatsApp profile name, deduplicated by its
   *   `wamid`, answered by a matching basic reply through the same channel); a sender
   *   libphonenumber-js calls invalid still gets its contact, with an unverified phone;
   * - each status on the outbound message with that provider id (`Chats.applyProviderStatus`:
   *   never moves back; `failed` with its error; unknown ids kept 10 minutes);
   * - a template status on the template it names (Meta's `message_template_id` first,
   *   then its name and language in that account, then with no account:
   *   `Templates.applyProviderStatus`), in every organization with a channel of that
   *   account; `REINSTATED` is stored as `APPROVED`, `FLAGGED` is logged and changes nothing;
   * - a template category change (`template_category_update`) likewise on the template it
   *   names (`Templates.applyProviderCategory`).
   * A change for a number or account no channel has is acknowledged and logged, and
   * nothing of it is stored. Every part it refuses — a message or status core refuses (an
   * empty text…), a part of unexpected shape, a body that is not a WhatsApp
   * notification — is logged and kept as a {@link WebhookReject} in
   * `Storage.webhookRejects` (30 days; docs/whatsapp-webhooks.md "Refused parts"; once:
   * its id is derived from its content, so a redelivery keeps nothing twice), and the rest
   * is stored. Log lines about a routed change carry its `organization_id`. Once stored,
   * the POST is counted by the runtime's `MetricsRecorder` (`accepted`, or
   * `accepted_with_refusals` when a part was refused). Fails
   * only with `StorageError` (then nothing is acknowledged and the provider retries; what
   * was already stored is stored again as a no-op).
   */
  readonly receive: (payload: unknown) => Effect.Effect<WebhookReceipt, StorageError>
}

/**
 * Tag of the {@link WhatsAppWebhooksService}; `WhatsAppWebhooks.layer` needs `Channels`,
 * `Chats`, `Messaging`, `Templates` and `Storage` (`Core.layer` provides it).
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
  static readonly layer: Layer.Layer<
    WhatsAppWebhooks,
    never,
    Channels | Chats | Messaging | Templates | Storage
  > = Layer.effect(
    WhatsAppWebhooks,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const channels = yield* Channels
  const chats = yield* Chats
  const messaging = yield* Messaging
  const templates = yield* Templates
  const storage = yield* Storage
  let prunedAt = Number.NEGATIVE_INFINITY

  /**
   * Stores one routed `messages` change; every refused part goes to `refused`. Its log lines
   * name the organization at each line (`refuse`, `Messaging.receive`), not by annotating
   * the whole change: that would cost every status report two fiber-ref writes
   * (docs/benchmarks.md).
   */
  const receiveMessages = (owner: ChannelOwner, change: MessagesChange, refused: Array<RefusedPart>) =>
    Effect.gen(function* () {
      const at = { organization_id: owner.organization_id, phone_number_id: change.phone_number_id }
      for (const part of change.refused) yield* refuse(refused, { ...at, ...part }, "part of unexpected shape", null)
      for (const message of change.messages) {
        yield* messaging.receive(owner.organization_id, inboundInputOf(owner, message)).pipe(
          Effect.catchTag("InvalidInput", (error) =>
            refuse(refused, { ...at, reason: issuesOf(error), item: message.raw }, "inbound message", message.provider_message_id)
          )
        )
      }
      for (const status of change.statuses) {
        yield* chats.applyProviderStatus(
          owner.organization_id,
          status.provider_message_id,
          status.status,
          status.failure ?? undefined,
          status.callback_data ?? undefined
        ).pipe(
          Effect.catchTag("InvalidInput", (error) =>
            refuse(refused, { ...at, reason: issuesOf(error), item: status.raw }, "status", status.provider_message_id)
          )
        )
      }
    })

  /** Stores one change item; the organizations it was routed to (none: not counted). */
  const receiveChange = (
    change: WhatsAppWebhookChange,
    refused: Array<RefusedPart>
  ): Effect.Effect<ReadonlyArray<OrganizationId>, StorageError> => {
    switch (change._tag) {
      case "Ignored":
        return Effect.as(Effect.logDebug("WhatsApp webhook: field not handled").pipe(Effect.annotateLogs({ field: change.field })), NONE)
      case "Refused": {
        const part = { organization_id: null, phone_number_id: change.phone_number_id, reason: change.reason, item: change.item }
        return Effect.as(refuse(refused, part, "part of unexpected shape", null), NONE)
      }
      case "Messages":
        return Effect.flatMap(channels.findByPhoneNumberId(change.phone_number_id), (owner) =>
          Option.match(owner, {
            // Not refused but not ours: another number of a shared Meta app, or a channel not
            // connected yet. Acknowledged and logged; nothing of it is stored.
            onNone: () =>
              Effect.as(
                Effect.logWarning("WhatsApp webhook for a phone number id no channel has; acknowledged, nothing stored").pipe(
                  Effect.annotateLogs({ phone_number_id: change.phone_number_id })
                ),
                NONE
              ),
            onSome: (owner) => Effect.as(receiveMessages(owner, change, refused), [owner.organization_id])
          })
        )
      case "TemplateStatus":
        return receiveTemplateChange(change, "status", (organizationId) => templates.applyProviderStatus(organizationId, change))
      case "TemplateCategory":
        return receiveTemplateChange(change, "category", (organizationId) => templates.applyProviderCategory(organizationId, change))
    }
  }

  /**
   * Applies a template change of an account (`apply`) in every organization with a channel
   * of that account; the organizations it reached.
   */
  const receiveTemplateChange = (
    change: TemplateChange,
    what: "status" | "category",
    apply: (organizationId: OrganizationId) => Effect.Effect<Option.Option<unknown>, StorageError>
  ) =>
    Effect.gen(function* () {
      const owners = yield* channels.findByWabaId(change.waba_id)
      const organizations = [...new Set(owners.map((owner) => owner.organization_id))]
      if (organizations.length === 0) {
        yield* Effect.logWarning(`WhatsApp template ${what} for an account no channel has; acknowledged, nothing stored`).pipe(
          Effect.annotateLogs({ waba_id: change.waba_id })
        )
        return NONE
      }
      for (const organizationId of organizations) {
        yield* Effect.gen(function* () {
          const updated = yield* apply(organizationId)
          if (Option.isNone(updated)) {
            yield* Effect.logInfo(`WhatsApp template ${what} for a template this organization does not have`).pipe(
              Effect.annotateLogs({ name: change.name, language: change.language, [what]: change._tag === "TemplateStatus" ? change.status : change.category })
            )
          }
        }).pipe(Effect.annotateLogs({ organization_id: organizationId }))
      }
      return organizations
    })

  /**
   * Stores the refused parts of one webhook, and prunes those past 30 days at most once an
   * hour. Nothing refused and no prune due (nearly every webhook): one clock reading.
   */
  const keepRefused = (refused: ReadonlyArray<RefusedPart>) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      refused.length === 0 && now - prunedAt < PRUNE_EVERY_MS ? Effect.void : storeRefused(refused, now))

  const storeRefused = (refused: ReadonlyArray<RefusedPart>, now: number) =>
    Effect.gen(function* () {
      if (refused.length > 0) {
        const received_at = new Date(now).toISOString()
        const byId = new Map<string, WebhookReject>()
        for (const part of refused) {
          const kept = { ...part, item: keptItem(part.item) }
          const id = rejectIdOf(kept)
          if (!byId.has(id)) byId.set(id, { ...kept, id, received_at })
        }
        yield* storage.webhookRejects.insert([...byId.values()])
      }
      if (now - prunedAt >= PRUNE_EVERY_MS) {
        prunedAt = now
        yield* storage.webhookRejects.prune(new Date(now - WEBHOOK_REJECT_RETENTION_MS).toISOString())
      }
    })

  const receive = Effect.fnUntraced(function* (payload: unknown) {
    const changes = readWhatsAppWebhook(payload)
    const refused: Array<RefusedPart> = []
    const organizations = new Set<OrganizationId>()
    let received = 0
    if (changes === undefined) {
      const part = { organization_id: null, phone_number_id: null, reason: NOT_WHATSAPP, item: payload }
      yield* refuse(refused, part, "body that is not a WhatsApp Business Account notification", null)
    } else {
      for (const change of changes) {
        const routed = yield* receiveChange(change, refused)
        if (routed.length > 0) received += 1
        for (const organizationId of routed) organizations.add(organizationId)
      }
    }
    yield* keepRefused(refused)
    // Counted once everything is stored (a failed store is the caller's to count).
    const metrics = yield* MetricsRecorder
    metrics.providerWebhook(refused.length === 0 ? "accepted" : "accepted_with_refusals")
    const receipt: WebhookReceipt = { received, organizations: [...organizations] }
    return receipt
  })

  const service: WhatsAppWebhooksService = { receive }
  return service
})

/** How often refused parts older than 30 days are pruned: at most once an hour, on a webhook. */
const PRUNE_EVERY_MS = 60 * 60 * 1000

const NONE: ReadonlyArray<OrganizationId> = []

const NOT_WHATSAPP = "not a WhatsApp Business Account notification"

type MessagesChange = Extract<WhatsAppWebhookChange, { readonly _tag: "Messages" }>
type TemplateChange = Extract<WhatsAppWebhookChange, { readonly _tag: "TemplateStatus" | "TemplateCategory" }>

/** A refused part before it is stored: a {@link WebhookReject} without its id and time. */
type RefusedPart = Omit<WebhookReject, "id" | "received_at">

/**
 * Adds a refused part to `refused`, with one warning: what it was, its organization,
 * business number and provider id when known, and why (never the part itself).
 */
const refuse = (refused: Array<RefusedPart>, part: RefusedPart, what: string, providerMessageId: string | null) => {
  refused.push(part)
  return Effect.logWarning(`WhatsApp webhook: ${what}; acknowledged and kept as refused`).pipe(
    Effect.annotateLogs({
      ...(part.organization_id === null ? {} : { organization_id: part.organization_id }),
      phone_number_id: part.phone_number_id,
      provider_message_id: providerMessageId?.slice(0, MAX_NAME_LENGTH) ?? null,
      reason: part.reason
    })
  )
}

/** The issues of a refusal in words: `field: code; …`. */
const issuesOf = (error: InvalidInput): string => error.issues.map((issue) => `${issue.field ?? "input"}: ${issue.code}`).join("; ")

/**
 * The id of a refused part: a UUID (version 8, RFC 9562) made of the SHA-256 of its
 * organization, number, reason and JSON, so a redelivery of the same notification keeps
 * nothing twice (the store skips an id it has).
 */
const rejectIdOf = (part: RefusedPart): string => {
  const hex = hash("sha256", JSON.stringify([part.organization_id, part.phone_number_id, part.reason, part.item]), "hex")
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

/** A refused part's JSON as kept: whole, or its first characters when too long. */
const keptItem = (item: unknown): unknown => {
  const json = JSON.stringify(item ?? null)
  return json.length <= WEBHOOK_REJECT_ITEM_MAX_CHARS ? (item ?? null) : { truncated: true, json: json.slice(0, WEBHOOK_REJECT_ITEM_MAX_CHARS) }
}

/** The `Messaging.receive` input of a customer message that came in through `owner`'s channel. */
const inboundInputOf = (owner: ChannelOwner, message: WhatsAppInboundMessage): InboundMessageInput => ({
  phone: `+${message.from.replace(/^\+/, "")}`,
  type: message.type,
  text: message.text,
  media: message.media === null ? null : mediaContentOf(message.media),
  ...(message.media === null ? {} : { media_fetch: { declared_sha256: message.media.sha256 ?? null, too_large: message.media.too_large === true } }),
  content: message.content,
  provider_message_id: message.provider_message_id,
  first_name: message.profile_name?.trim().slice(0, MAX_NAME_LENGTH) ?? null,
  channel_uuid: owner.channel.uuid
})

/** The message's `media` object of a webhook's media: what the record keeps (no digest, no flag). */
const mediaContentOf = ({ sha256: _sha256, too_large: _tooLarge, ...media }: NonNullable<WhatsAppInboundMessage["media"]>) => media
