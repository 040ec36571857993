import type {
  ApiKey,
  ApiKeyId,
  Channel,
  ChannelId,
  ContactDetails,
  ContactImportRequest,
  ContactImportRow,
  GroupId,
  GroupReference,
  NewInboundMedia,
  NewMedia,
  Organization,
  OrganizationId
} from "@switchboard/core"

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
    plan: { contacts_limit: null, label_limit: 10, media_bytes_limit: null, api_access: true },
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
    expires_at: null,
    ...overrides
  }
}

/**
 * An ISO 8601 UTC instant `minutes` minutes after 2026-02-01T00:00:00Z: distinct, ordered
 * `now` values for records whose order matters.
 */
export const instant = (minutes: number): string => new Date(Date.UTC(2026, 1, 1) + minutes * 60_000).toISOString()

/** The E.164 phone `+1415555` followed by `n` on four digits: `phone(100)` is `"+14155550100"`. */
export const phone = (n: number): string => `+1415555${String(n).padStart(4, "0")}`

/** A group named by name in an import row (matched case-insensitively, created when missing). */
export const groupNamed = (name: string): GroupReference => ({ _tag: "ByName", name })

/** A group named by uuid in an import row (it must exist). */
export const groupWithId = (uuid: GroupId): GroupReference => ({ _tag: "ById", uuid })

/** One import row: `details` only the fields it sets, `groups` to add the contact to. */
export const importRow = (
  phone: string,
  details: Partial<ContactDetails> = {},
  groups: ReadonlyArray<GroupReference> = []
): ContactImportRow => ({ phone, details, groups })

/**
 * An import request for `rows` with just enough fresh ids (one per row plus one per group
 * named by name), `now` default `instant(0)` and `contactsLimit` default `null`.
 */
export const importRequest = (
  rows: ReadonlyArray<ContactImportRow>,
  options: { readonly now?: string; readonly contactsLimit?: number | null } = {}
): ContactImportRequest => {
  const names = rows.reduce((n, row) => n + row.groups.filter((group) => group._tag === "ByName").length, 0)
  return {
    rows,
    ids: Array.from({ length: rows.length + names }, uuid),
    contactsLimit: options.contactsLimit ?? null,
    now: options.now ?? instant(0)
  }
}

/** Every detail of a contact `null`, with `overrides`: what a record holds for unset fields. */
export const details = (overrides: Partial<ContactDetails> = {}): ContactDetails => ({
  first_name: null,
  last_name: null,
  email: null,
  street: null,
  city: null,
  state: null,
  zip: null,
  country: null,
  ...overrides
})

let phoneNumberIds = 0

/** A channel record with a fresh uuid and a `phone_number_id` no other fixture has. */
export const channelRecord = (overrides: Partial<Channel> = {}): Channel => {
  phoneNumberIds += 1
  return {
    uuid: uuid() as ChannelId,
    provider: "whatsapp_cloud",
    phone_number_id: String(106540352240000 + phoneNumberIds),
    display_phone_number: "+31612345678",
    waba_id: "102290129340398",
    access_token_set: true,
    access_token_last4: "wxyz",
    throughput_mps: 50,
    status: "active",
    paused_reason: null,
    paused_at: null,
    created_at: instant(phoneNumberIds),
    updated_at: instant(phoneNumberIds),
    ...overrides
  }
}

/** An uploaded media record (`stored`, 1 000 bytes), created at `minutes`; `overrides` replace fields. */
export const mediaUpload = (minutes: number, overrides: Partial<NewMedia> = {}): NewMedia => {
  const id = uuid()
  return {
    uuid: id,
    type: "document",
    mime_type: "application/pdf",
    size: 1_000,
    sha256: "a".repeat(64),
    filename: "offer.pdf",
    status: "stored",
    failure: null,
    source: "upload",
    message_uuid: null,
    contact_uuid: null,
    blob_key: `media/${id}`,
    created_at: instant(minutes),
    stored_at: instant(minutes),
    fetch: null,
    ...overrides
  }
}

/** The media of an inbound image through `channelUuid` (`pending`), its fetch job due at `minutes`; `overrides` replace fields. */
export const inboundMedia = (channelUuid: string, minutes = 0, overrides: Partial<NewInboundMedia> = {}): NewInboundMedia => ({
  uuid: uuid(),
  type: "image",
  mime_type: "image/jpeg",
  size: null,
  sha256: null,
  filename: null,
  status: "pending",
  failure: null,
  source: "inbound",
  blob_key: null,
  created_at: instant(minutes),
  stored_at: null,
  fetch: {
    channel_uuid: channelUuid,
    provider_media_id: `meta-${uuid()}`,
    declared_sha256: "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
    expires_at: instant(minutes + 7 * 24 * 60),
    next_fetch_at: instant(minutes)
  },
  ...overrides
})
