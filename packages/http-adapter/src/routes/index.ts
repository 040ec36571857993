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
import type { RouteDefinition } from "./route.js"
import { verifyRoute } from "./verify.js"

/**
 * Every route the handler serves by default, in documentation order.
 *
 * @category routes
 */
export const defaultRoutes: ReadonlyArray<RouteDefinition> = [
  verifyRoute,
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
  bulkDeleteLabelsRoute
]
