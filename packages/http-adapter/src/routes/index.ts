import { broadcastRoutes } from "./broadcasts.js"
import { createBasicReplyRoute, getBasicReplyRoute, listBasicRepliesRoute } from "./basicReplies.js"
import {
  contactLabelsRoute,
  deleteContactRoute,
  getContactRoute,
  importContactsRoute,
  listContactsRoute,
  updateContactRoute
} from "./contacts.js"
import { createGroupRoute, listGroupsRoute, renameGroupRoute } from "./groups.js"
import {
  assignLabelRoute,
  bulkDeleteLabelsRoute,
  createLabelRoute,
  deleteLabelRoute,
  getLabelRoute,
  listLabelsRoute
} from "./labels.js"
import { channelRoutes } from "./channels.js"
import { getChatRoute, listChatMessagesRoute, listChatsRoute, markChatReadRoute, updateChatRoute } from "./chats.js"
import { discoveryRoutes } from "./discovery.js"
import { mediaRoutes } from "./media.js"
import { cancelMessageRoute, getMessageRoute, reactToMessageRoute, retryMessageRoute } from "./messages.js"
import { sendInteractiveRoute, sendMediaRoute, sendTemplateRoute, sendTextRoute } from "./messaging.js"
import type { RouteDefinition } from "./route.js"
import { deleteTemplateRoute, getTemplateRoute, listTemplatesRoute, submitTemplateRoute, templatePayloadRoute } from "./templates.js"
import { verifyRoute } from "./verify.js"
import { webhookEndpointRoutes } from "./webhookEndpoints.js"
import { whatsAppHandshakeRoute, whatsAppWebhookRoute } from "./whatsappWebhook.js"

/**
 * Every route the handler serves by default, in documentation order: the discovery group
 * (`/`, `/openapi.json`, `/docs`, no API key) first.
 *
 * @category routes
 */
export const defaultRoutes: ReadonlyArray<RouteDefinition> = [
  ...discoveryRoutes,
  verifyRoute,
  sendTemplateRoute,
  sendTextRoute,
  sendMediaRoute,
  sendInteractiveRoute,
  ...mediaRoutes,
  importContactsRoute,
  listContactsRoute,
  getContactRoute,
  updateContactRoute,
  deleteContactRoute,
  contactLabelsRoute,
  assignLabelRoute,
  createGroupRoute,
  renameGroupRoute,
  listGroupsRoute,
  createLabelRoute,
  listLabelsRoute,
  getLabelRoute,
  deleteLabelRoute,
  bulkDeleteLabelsRoute,
  listBasicRepliesRoute,
  createBasicReplyRoute,
  getBasicReplyRoute,
  listTemplatesRoute,
  getTemplateRoute,
  templatePayloadRoute,
  submitTemplateRoute,
  deleteTemplateRoute,
  listChatsRoute,
  getChatRoute,
  listChatMessagesRoute,
  updateChatRoute,
  markChatReadRoute,
  getMessageRoute,
  retryMessageRoute,
  cancelMessageRoute,
  reactToMessageRoute,
  ...broadcastRoutes,
  whatsAppHandshakeRoute,
  whatsAppWebhookRoute,
  ...channelRoutes,
  ...webhookEndpointRoutes
]
