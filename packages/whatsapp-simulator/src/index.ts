export {
  type Answer,
  type Route,
  ROUTES,
  Script,
  type ShareRule
} from "./script.js"
export type { SimulatorSettings } from "./settings.js"
export {
  DOWNLOAD_URL_LIFETIME_MS,
  MAX_MEDIA_BYTES,
  MediaLibrary,
  type MediaKind,
  type SimulatedMedia,
  UPLOAD_TYPES
} from "./media.js"
export { type SimulatorOptions, startSimulator, WhatsAppSimulator } from "./simulator.js"
export {
  DELETED_NAME_BLOCK_MS,
  type SimulatedTemplate,
  TEMPLATE_CATEGORIES,
  TEMPLATE_STATUS_EVENTS,
  TEMPLATE_STATUSES,
  TemplateLibrary,
  TemplateNotFoundError,
  type TemplatePage,
  type TemplateFilter,
  type TemplateReference,
  type TemplateSeed,
  type TemplateStatus
} from "./templates.js"
export { DEFAULT_TEMPLATE_PAGE_SIZE, MAX_TEMPLATE_PAGE_SIZE } from "./graphTemplates.js"
export { connectSimulator, type SimulatorClient } from "./client.js"
export { type AnswerRecord, maxInWindow, type Notification, type ReadReceiptCall, type Received } from "./records.js"
export type { DeliveredInbound } from "./graphReads.js"
export { postWebhook, sign, type WebhookDelivery } from "./webhook.js"
export {
  buttonMessage,
  contactsMessage,
  DEFAULT_NUMBER,
  digitsOf,
  type InboundContent,
  inboundMessagePayload,
  interactiveReply,
  locationMessage,
  mediaMessage,
  newWamid,
  reactionMessage,
  type SimulatedNumber,
  statusError,
  type StatusError,
  type StatusName,
  statusPayload,
  templateCategoryPayload,
  templateStatusPayload,
  textMessage
} from "./payloads.js"
export {
  defaultHttpStatus,
  ERROR_TITLES,
  errorTitle,
  graphError,
  type GraphErrorBody,
  type GraphErrorOptions
} from "./graphErrors.js"
