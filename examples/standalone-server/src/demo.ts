import { Organizations, type InvalidInput, type OrganizationId, type ApiKeyId, type StorageError } from "@switchboard/core"
import { Effect, Option } from "effect"

/**
 * What the server prints once, on its first start on an empty database: the demo
 * organization's id and its API key (the only time the key is shown).
 *
 * @category models
 */
export interface DemoCredentials {
  readonly org_id: OrganizationId
  readonly key_id: ApiKeyId
  readonly api_key: string
}

/**
 * Name of the organization created on an empty database (docs/standalone-server.md).
 *
 * @category bootstrap
 */
export const DEMO_ORGANIZATION_NAME = "Demo organization"

/**
 * On a database without organizations, creates "Demo organization" (unlimited plan with
 * API access, active subscription) and an API key for it, and returns its credentials;
 * on any other database does nothing and returns `None` (docs/standalone-server.md).
 *
 * @category bootstrap
 */
export const ensureDemoOrganization: Effect.Effect<
  Option.Option<DemoCredentials>,
  InvalidInput | StorageError,
  Organizations
> = Effect.gen(function* () {
  const organizations = yield* Organizations
  const existing = yield* organizations.list()
  if (existing.length > 0) return Option.none()
  const organization = yield* organizations.create({
    name: DEMO_ORGANIZATION_NAME,
    plan: { contacts_limit: null, label_limit: null, api_access: true },
    subscription: "active"
  })
  const issued = yield* organizations.issueApiKey(organization.id).pipe(
    Effect.catchTag("OrganizationNotFound", (error) => Effect.die(error))
  )
  return Option.some({ org_id: organization.id, key_id: issued.key_id, api_key: issued.api_key })
}).pipe(Effect.withSpan("StandaloneServer.ensureDemoOrganization"))
