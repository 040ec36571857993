import type { ApiKey, ApiKeyId, Organization, OrganizationId } from "@switchboard/core"

let counter = 0

/** A fresh UUID-shaped id (v4 layout), unique within the test run. */
export const uuid = (): string => {
  counter += 1
  const hex = counter.toString(16).padStart(12, "0")
  return `00000000-0000-4000-8000-${hex}`
}

/**
 * An organization record with every field set; `overrides` replace fields. Timestamps
 * default to a fixed instant plus `counter` seconds, so later fixtures are newer.
 */
export const organization = (overrides: Partial<Organization> = {}): Organization => {
  const id = uuid() as OrganizationId
  const at = new Date(Date.UTC(2026, 0, 1) + counter * 1000).toISOString()
  return {
    id,
    name: `Organization ${id.slice(-4)}`,
    plan: { contacts_limit: null, label_limit: 10, api_access: true },
    subscription: "active",
    created_at: at,
    updated_at: at,
    ...overrides
  }
}

/** An API key record of `organizationId` with a unique 64-character hex hash. */
export const apiKey = (organizationId: OrganizationId, overrides: Partial<ApiKey> = {}): ApiKey => {
  const id = uuid() as ApiKeyId
  return {
    id,
    organization_id: organizationId,
    prefix: `sb_${id.slice(-8)}`,
    hash: id.replace(/-/g, "").padEnd(64, "a"),
    created_at: new Date(Date.UTC(2026, 0, 2)).toISOString(),
    revoked_at: null,
    ...overrides
  }
}
