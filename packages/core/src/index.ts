/**
 * `@switchboard/core`: the domain of the Developer Messaging API as Effect services, the
 * Storage interface every adapter implements, and the in-memory storage.
 *
 * @packageDocumentation
 */

// The model: records, ids, schemas, errors and pure rules
export * from "./model/basicReplies.js"
export * from "./model/broadcastErrors.js"
export * from "./model/broadcasts.js"
export * from "./model/channelErrors.js"
export * from "./model/channels.js"
export * from "./model/chatErrors.js"
export * from "./model/chats.js"
export * from "./model/common.js"
export * from "./model/commonErrors.js"
export * from "./model/contacts.js"
export * from "./model/failureClasses.js"
export * from "./model/groups.js"
export * from "./model/idempotency.js"
export * from "./model/labels.js"
export * from "./model/media.js"
export * from "./model/messages.js"
export * from "./model/messaging.js"
export * from "./model/messagingErrors.js"
export { nameKey, validName } from "./model/names.js"
export * from "./model/organizationErrors.js"
export * from "./model/organizations.js"
export * from "./model/rateLimitErrors.js"
export * from "./model/rateLimits.js"
export * from "./model/templateErrors.js"
export * from "./model/templates.js"
export * from "./model/webhookErrors.js"
export * from "./model/webhooks.js"
export * from "./model/whatsapp.js"
export * from "./model/window.js"

// Helpers over the model
export * from "./random/SecureRandom.js"

// The storage port
export * from "./storage/BasicReplyRepository.js"
export * from "./storage/BlobStore.js"
export * from "./storage/blobSupport.js"
export * from "./storage/BroadcastRepository.js"
export * from "./storage/ChannelRepository.js"
export * from "./storage/ChatRepository.js"
export * from "./storage/ContactRepository.js"
export * from "./storage/endOfTurn.js"
export * from "./storage/errors.js"
export * from "./storage/GroupRepository.js"
export * from "./storage/IdempotencyRepository.js"
export * from "./storage/LabelRepository.js"
export * from "./storage/OrganizationRepository.js"
export * from "./storage/OutboxRepository.js"
export * from "./storage/RateLimitStore.js"
export * from "./storage/Storage.js"
export * from "./storage/TemplateRepository.js"
export * from "./storage/WebhookRejectRepository.js"
export * from "./storage/WebhookRepository.js"

// The in-memory adapter, and the file-system blob store
export * as FileBlobStore from "./files/FileBlobStore.js"
export * as MemoryBlobStore from "./memory/MemoryBlobStore.js"
export * as MemoryRateLimitStore from "./memory/MemoryRateLimitStore.js"
export * as MemoryStorage from "./memory/MemoryStorage.js"

// Dispatch loops and metrics
export * from "./dispatch/DispatchWake.js"
export * from "./dispatch/LeasedQueue.js"
export * from "./dispatch/wakeOnEnqueue.js"
export * from "./metrics/meteredStorage.js"
export * from "./metrics/MetricsRecorder.js"

// Shared by the services
export * from "./common/jsonInput.js"
export * from "./common/secretBox.js"
export * from "./common/SecretKey.js"
export * from "./common/Settings.js"

// The services
export * from "./organizations/Organizations.js"
export * from "./contacts/Contacts.js"
export * from "./groups/ContactGroups.js"
export * from "./labels/Labels.js"
export * from "./templates/Templates.js"
export * from "./basic-replies/BasicReplies.js"
export * from "./channels/Channels.js"
export * from "./channels/ChannelVerifier.js"
export * from "./channels/graphApi.js"
export * from "./chats/Chats.js"
export * from "./chats/ChatsService.js"
export * from "./chats/failureReactions.js"
export * from "./messaging/MessageTransport.js"
export * from "./messaging/Messaging.js"
export * from "./messaging/SendQueue.js"
export * as WhatsAppCloudTransport from "./messaging/WhatsAppCloudTransport.js"
export * from "./broadcasts/Broadcasts.js"
export * from "./webhooks/addressSafety.js"
export * from "./webhooks/WebhookDispatcher.js"
export * from "./webhooks/WebhookEndpoints.js"
export * from "./webhooks/WebhookSender.js"
export * from "./webhooks/WebhookSettings.js"
export * from "./whatsapp/readWebhook.js"
export * from "./whatsapp/WhatsAppWebhooks.js"
export * from "./imports/Imports.js"
export * from "./idempotency/Idempotency.js"
export * from "./rate-limits/RateLimiter.js"
export * from "./media/fetchMedia.js"

// The error union and the layers
export * from "./errors.js"
export * as Core from "./Core.js"
