import { Effect } from "effect"
import { defineRoute } from "./route.js"
import { VerifyData } from "./schemas.js"

/**
 * `GET /verify` (docs/http-api.md "Authentication"): the key is valid, the subscription active and the plan
 * allows API access — all checked before any handler runs. Data:
 * `{message, organization: {id, name}}`.
 *
 * @category routes
 */
export const verifyRoute = defineRoute({
  method: "GET",
  path: "/verify",
  tag: "Auth",
  summary: "Verify the API key",
  data: VerifyData,
  handle: ({ auth }) =>
    Effect.succeed({
      message: "API key is valid",
      data: {
        message: "API key is valid",
        organization: { id: auth.organization.id, name: auth.organization.name }
      }
    })
})
