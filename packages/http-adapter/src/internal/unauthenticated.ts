import type { AuthenticatedOrganization } from "@switchboard/core"

/**
 * The `auth` handed to routes declared `authenticated: false`: there is no organization,
 * so reading any field of it throws (a defect, answered 500), instead of letting a handler
 * run with a made-up organization.
 */
export const NO_AUTHENTICATION: AuthenticatedOrganization = new Proxy({} as AuthenticatedOrganization, {
  get: (_target, property) => {
    throw new Error(`RouteRequest.auth.${String(property)} read by a route with authenticated: false`)
  }
})
