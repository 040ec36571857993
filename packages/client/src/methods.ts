/**
 * The hand-written table of the client's methods (docs/client.md "Methods"): for each
 * resource and method, the operationId it calls and, for a list, the key of its items in the
 * data. A test checks that every operation of the OpenAPI document (outside the tags Guide
 * and Webhooks) has exactly one method here.
 */
import type { OperationId } from "./generated/operations.js"

/**
 * One method of the table: the operation it calls; `items` marks a list and names its items' key.
 *
 * @category client
 */
export interface MethodDefinition {
  readonly operationId: OperationId
  readonly items?: string
}

/**
 * Every method of the client, by resource then method name.
 *
 * @category client
 */
export const METHODS = {
  auth: {
    verify: { operationId: "getVerify" }
  },
  send: {
    template: { operationId: "postSendTemplate" },
    text: { operationId: "postSend" },
    media: { operationId: "postSendMedia" },
    interactive: { operationId: "postSendInteractive" }
  },
  messages: {
    get: { operationId: "getMessagesByUuid" },
    retry: { operationId: "postMessagesByUuidRetry" },
    cancel: { operationId: "postMessagesByUuidCancel" },
    react: { operationId: "postMessagesByUuidReaction" }
  },
  media: {
    upload: { operationId: "postMedia" },
    list: { operationId: "getMedia", items: "media" },
    get: { operationId: "getMediaByUuid" },
    content: { operationId: "getMediaByUuidContent" },
    delete: { operationId: "deleteMediaByUuid" },
    createLink: { operationId: "postMediaByUuidLinks" }
  },
  broadcasts: {
    create: { operationId: "postBroadcasts" },
    list: { operationId: "getBroadcasts", items: "broadcasts" },
    get: { operationId: "getBroadcastsByUuid" },
    recipients: { operationId: "getBroadcastsByUuidRecipients", items: "recipients" },
    cancel: { operationId: "postBroadcastsByUuidCancel" }
  },
  contacts: {
    import: { operationId: "postContactsBulk" },
    list: { operationId: "getContacts", items: "contacts" },
    get: { operationId: "getContactsByUuid" },
    update: { operationId: "putContactsByUuid" },
    delete: { operationId: "deleteContactsByUuid" },
    labels: { operationId: "getContactsByUuidLabels" }
  },
  groups: {
    create: { operationId: "postContactGroups" },
    list: { operationId: "getContactGroups", items: "groups" },
    update: { operationId: "putContactGroupsByUuid" }
  },
  labels: {
    create: { operationId: "postLabels" },
    list: { operationId: "getLabels", items: "labels" },
    get: { operationId: "getLabelsByUuid" },
    delete: { operationId: "deleteLabelsByUuid" },
    bulkDelete: { operationId: "postLabelsBulkDelete" },
    assign: { operationId: "postContactsLabelsAssign" }
  },
  basicReplies: {
    create: { operationId: "postBasicReplies" },
    list: { operationId: "getBasicReplies", items: "basic_replies" },
    get: { operationId: "getBasicRepliesByUuid" }
  },
  templates: {
    create: { operationId: "postTemplates" },
    list: { operationId: "getTemplates", items: "templates" },
    get: { operationId: "getTemplatesByUuid" },
    payload: { operationId: "getTemplatesByUuidPayload" },
    delete: { operationId: "deleteTemplatesByUuid" }
  },
  chats: {
    list: { operationId: "getChats", items: "chats" },
    get: { operationId: "getChatsByUuid" },
    update: { operationId: "putChatsByUuid" },
    messages: { operationId: "getChatsByUuidMessages", items: "messages" },
    markRead: { operationId: "postChatsByUuidRead" }
  },
  channels: {
    create: { operationId: "postChannels" },
    list: { operationId: "getChannels", items: "channels" },
    get: { operationId: "getChannelsByUuid" },
    update: { operationId: "putChannelsByUuid" },
    delete: { operationId: "deleteChannelsByUuid" },
    resume: { operationId: "postChannelsByUuidResume" },
    syncTemplates: { operationId: "postChannelsByUuidTemplatesSync" }
  },
  webhookEndpoints: {
    create: { operationId: "postWebhookEndpoints" },
    list: { operationId: "getWebhookEndpoints", items: "webhook_endpoints" },
    get: { operationId: "getWebhookEndpointsByUuid" },
    update: { operationId: "putWebhookEndpointsByUuid" },
    delete: { operationId: "deleteWebhookEndpointsByUuid" },
    rotateSecret: { operationId: "postWebhookEndpointsByUuidRotateSecret" },
    deliveries: { operationId: "getWebhookEndpointsByUuidDeliveries", items: "deliveries" },
    retryDelivery: { operationId: "postWebhookEndpointsByUuidDeliveriesByIdRetry" }
  }
} as const satisfies Record<string, Record<string, MethodDefinition>>

/**
 * The table's type.
 *
 * @category client
 */
export type Methods = typeof METHODS
