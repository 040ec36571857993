import type { RouteDefinition } from "./route.js"
import { verifyRoute } from "./verify.js"

/**
 * Every route the handler serves by default, in documentation order.
 *
 * @category routes
 */
export const defaultRoutes: ReadonlyArray<RouteDefinition> = [verifyRoute]
