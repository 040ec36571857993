import { Layer } from "effect"
import { BasicReplies } from "./basic-replies/BasicReplies.js"
import { Broadcasts } from "./broadcasts/Broadcasts.js"
import { Channels } from "./channels/Channels.js"
import type { SecretKeyMismatch } from "./model/channelErrors.js"
import { Chats } from "./chats/Chats.js"
import { Contacts } from "./contacts/Contacts.js"
import { ContactGroups } from "./groups/ContactGroups.js"
import { Idempotency } from "./idempotency/Idempotency.js"
import { Imports } from "./imports/Imports.js"
import { Labels } from "./labels/Labels.js"
import { Messaging } from "./messaging/Messaging.js"
import { MessageTransport } from "./messaging/MessageTransport.js"
import { Organizations } from "./organizations/Organizations.js"
import { SecureRandom } from "./random/SecureRandom.js"
import type { StorageError } from "./storage/errors.js"
import type { Storage } from "./storage/Storage.js"
import { Templates } from "./templates/Templates.js"
import { TemplateSubmissions } from "./templates/TemplateSubmissions.js"
import { WebhookEndpoints } from "./webhooks/WebhookEndpoints.js"
import { WhatsAppWebhooks } from "./whatsapp/WhatsAppWebhooks.js"
import { TemplateSyncs } from "./templates/TemplateSync.js"

/**
 * Every domain service but {@link Messaging} and {@link Broadcasts} (which need a
 * transport), wired together.
 * Needs only a {@link Storage}; provides the services and {@link SecureRandom}. Fails to
 * build only when a configured `SecretKey` is not the store's (`SecretKeyMismatch`) or
 * the store cannot be read for that check (docs/channels.md "The secret key").
 */
const services: Layer.Layer<
  | Organizations
  | Contacts
  | ContactGroups
  | Labels
  | Imports
  | Templates
  | TemplateSubmissions
  | BasicReplies
  | Chats
  | Idempotency
  | Channels
  | TemplateSyncs
  | WebhookEndpoints
  | SecureRandom,
  SecretKeyMismatch | StorageError,
  Storage
> = Layer.mergeAll(
  Organizations.layer,
  Contacts.layer,
  Chats.layer,
  ContactGroups.layer,
  Templates.layer,
  BasicReplies.layer,
  Idempotency.layer,
  TemplateSyncs.layer.pipe(Layer.provideMerge(Channels.layer)),
  WebhookEndpoints.layer,
  Imports.layer.pipe(Layer.provideMerge(Labels.layer))
).pipe(
  // Submits and deletes templates at Meta with the channels' tokens.
  (built) => Layer.provideMerge(TemplateSubmissions.layer, built),
  Layer.provideMerge(SecureRandom.layer)
)

/**
 * Every domain service of Switchboard, wired together, with {@link Messaging} sending
 * through `transport` (for example `WhatsAppCloudTransport.layer(options)`, or a test's
 * own). Needs only a {@link Storage} (an adapter's Layer); provides the services and
 * {@link SecureRandom}. docs/messaging.md "Transports". `Channels` reads the optional
 * `SecretKey` and `ChannelVerifier` (provide them with `Layer.provide`); with a key that
 * is not the store's the Layer fails with `SecretKeyMismatch` (docs/channels.md).
 *
 * @category layers
 * @example
 * import { Core, MemoryStorage, WhatsAppCloudTransport } from "@switchboard/core"
 * import { Layer } from "effect"
 *
 * const transport = WhatsAppCloudTransport.layer({ phoneNumberId: "1234", accessToken: process.env.WA_TOKEN! })
 * const live = Core.layerWithTransport(transport).pipe(Layer.provide(MemoryStorage.layer))
 */
export const layerWithTransport = (
  transport: Layer.Layer<MessageTransport>
): Layer.Layer<
  Layer.Layer.Success<typeof services> | Messaging | Broadcasts | MessageTransport | WhatsAppWebhooks,
  Layer.Layer.Error<typeof services>,
  Storage
> =>
  Layer.provideMerge(
    WhatsAppWebhooks.layer,
    Layer.provideMerge(Layer.merge(Messaging.layer, Broadcasts.layer).pipe(Layer.provideMerge(transport)), services)
  )

/**
 * Every domain service of Switchboard, wired together, with the default recording
 * transport: sends are stored and marked `sent`, nothing goes over the network
 * (docs/messaging.md "Transports"). Needs only a {@link Storage} (an adapter's Layer);
 * provides the services and {@link SecureRandom}. Use {@link layerWithTransport} for
 * another transport.
 *
 * @category layers
 */
export const layer: Layer.Layer<
  Layer.Layer.Success<typeof services> | Messaging | Broadcasts | MessageTransport | WhatsAppWebhooks,
  Layer.Layer.Error<typeof services>,
  Storage
> =
  layerWithTransport(MessageTransport.recording)

/**
 * The services {@link layer} provides: what route handlers and hosts may use.
 *
 * @category layers
 */
export type CoreServices = Layer.Layer.Success<typeof layer>
