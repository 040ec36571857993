import { Schema } from "effect"
import type { GroupId, GroupSummary } from "./groups.js"
import type { LabelSummary } from "./labels.js"

/**
 * Identifier of a contact.
 *
 * @category models
 */
export const ContactId = Schema.UUID.pipe(Schema.brand("ContactId"))
/** @category models */
export type ContactId = typeof ContactId.Type

/**
 * The writable text fields of a contact other than `phone` (docs/contacts.md "Records"). `null`
 * means not set.
 *
 * @category models
 */
export interface ContactDetails {
  readonly first_name: string | null
  readonly last_name: string | null
  readonly email: string | null
  readonly street: string | null
  readonly city: string | null
  readonly state: string | null
  readonly zip: string | null
  readonly country: string | null
}

/** Names of {@link ContactDetails}, in record order. */
export const CONTACT_DETAIL_FIELDS = [
  "first_name",
  "last_name",
  "email",
  "street",
  "city",
  "state",
  "zip",
  "country"
] as const satisfies ReadonlyArray<keyof ContactDetails>

/**
 * A contact record (docs/contacts.md "Records"): `phone` in E.164, unique per organization;
 * `phone_valid` is `false` only for a contact created by an inbound message whose sender
 * libphonenumber-js calls invalid (its phone is then `+` and WhatsApp's id as given,
 * docs/contacts.md "Unverified phones"); the groups it belongs to and the labels it
 * carries, each sorted by name; `marketing_opt_out_at`, when the contact's number refused
 * marketing messages (Meta's 131050; broadcasts of MARKETING templates skip it,
 * docs/broadcasts.md "Opt-outs"), else `null`.
 *
 * @category models
 */
export interface Contact extends ContactDetails {
  readonly uuid: ContactId
  readonly phone: string
  readonly phone_valid: boolean
  readonly groups: ReadonlyArray<GroupSummary>
  readonly labels: ReadonlyArray<LabelSummary>
  readonly marketing_opt_out_at: string | null
  readonly created_at: string
  readonly updated_at: string
}

/**
 * Input of one bulk-import row as the API takes it (`POST /contacts/bulk`, docs/contacts.md "Endpoints").
 * `phone` and `first_name` are required; `group` holds group names or group uuids.
 *
 * @category models
 */
export interface ContactImportInput {
  readonly first_name?: string
  readonly last_name?: string
  readonly phone?: string
  readonly email?: string
  readonly group?: ReadonlyArray<string>
  readonly street?: string
  readonly city?: string
  readonly state?: string
  readonly zip?: string
  readonly country?: string
}

/**
 * Input of a partial contact update (`PUT /contacts/{uuid}`,
 * docs/contacts.md "Endpoints"): fields left out
 * are kept; `null` clears `last_name` or `email` (docs/contacts.md "Rules").
 *
 * @category models
 */
export interface ContactUpdateInput {
  readonly first_name?: string
  readonly last_name?: string | null
  readonly phone?: string
  readonly email?: string | null
  /** Only `null`: clears the contact's marketing opt-out (docs/broadcasts.md "Opt-outs"). */
  readonly marketing_opt_out_at?: null
}

/**
 * A group named by a bulk-import row: by uuid (must exist) or by name (created when
 * missing).
 *
 * @category models
 */
export type GroupReference =
  | { readonly _tag: "ById"; readonly uuid: GroupId }
  | { readonly _tag: "ByName"; readonly name: string }

/**
 * One validated, normalised import row for the store: `phone` in E.164, `details` only the
 * fields the row set (they overwrite; absent ones are kept), `groups` to add the contact to.
 *
 * @category models
 */
export interface ContactImportRow {
  readonly phone: string
  /**
   * Whether libphonenumber-js validated `phone`; recorded on a contact this row creates
   * (an existing contact keeps its own). Absent means `true`; only a send answering an
   * unverified contact passes `false` (docs/contacts.md "Unverified phones").
   */
  readonly phone_valid?: boolean
  readonly details: Partial<ContactDetails>
  readonly groups: ReadonlyArray<GroupReference>
}

/**
 * Result of a bulk import (docs/contacts.md "Endpoints"): one entry per distinct phone, in first-seen order.
 *
 * @category models
 */
export interface ContactImportResult {
  readonly created: number
  readonly updated: number
  readonly contacts: ReadonlyArray<{
    readonly uuid: ContactId
    readonly phone: string
    readonly status: "created" | "updated"
  }>
}
