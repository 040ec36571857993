import type { Effect, Option } from "effect"
import type { Page, PageRequest } from "../model/common.js"
import type {
  Contact,
  ContactDetails,
  ContactId,
  ContactImportResult,
  ContactImportRow
} from "../model/contacts.js"
import type { GroupId } from "../model/groups.js"
import type { Label } from "../model/labels.js"
import type { OrganizationId } from "../model/organizations.js"
import type { StorageError } from "./errors.js"

/**
 * Outcome of {@link ContactRepository.importBulk}. Anything but `Imported` wrote nothing.
 *
 * @category storage
 */
export type ContactImportOutcome =
  | { readonly _tag: "Imported"; readonly result: ContactImportResult }
  | { readonly _tag: "LimitExceeded"; readonly limit: number; readonly usage: number; readonly requested: number }
  | { readonly _tag: "GroupsNotFound"; readonly uuids: ReadonlyArray<GroupId> }

/**
 * Outcome of {@link ContactRepository.update}.
 *
 * @category storage
 */
export type ContactUpdateOutcome =
  | { readonly _tag: "Updated"; readonly contact: Contact }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "PhoneTaken" }

/**
 * Input of {@link ContactRepository.importBulk}: rows already validated and merged by
 * phone (one per distinct E.164 phone, first-seen order); `ids` holds at least
 * `rows.length` + (group names) fresh uuids, used in order for new contacts then new
 * groups; `contactsLimit` is the plan's `contacts_limit` (`null` = unlimited).
 *
 * @category storage
 */
export interface ContactImportRequest {
  readonly rows: ReadonlyArray<ContactImportRow>
  readonly ids: ReadonlyArray<string>
  readonly contactsLimit: number | null
  readonly now: string
  /**
   * Whether the created contacts write `contact.created` events to the outbox (see
   * `WebhookRepository`); default `true`. The admin CLI's `import` passes `false`.
   */
  readonly events?: boolean
}

/**
 * Contacts of one organization. Every method takes the organization id first and never
 * sees another organization's records.
 *
 * @category storage
 */
export interface ContactRepository {
  /**
   * Upserts the rows by phone and adds them to their groups, all or nothing, in one
   * atomic step with the plan-limit check: when `count + new contacts > contactsLimit`
   * nothing is written and `LimitExceeded` tells the limit, the current count and the
   * number of new contacts. Groups named by uuid must exist (`GroupsNotFound`); groups
   * named by name are matched case-insensitively after trimming, or created. Fields in a
   * row's `details` overwrite, absent ones are kept; groups are only added.
   */
  readonly importBulk: (
    organizationId: OrganizationId,
    request: ContactImportRequest
  ) => Effect.Effect<ContactImportOutcome, StorageError>
  /** One page of contacts, newest first (`created_at desc, uuid desc`), with the total. */
  readonly list: (organizationId: OrganizationId, page: PageRequest) => Effect.Effect<Page<Contact>, StorageError>
  /** The contact with this uuid. */
  readonly findById: (organizationId: OrganizationId, id: ContactId) => Effect.Effect<Option.Option<Contact>, StorageError>
  /**
   * The contact whose stored `phone` equals `phone` exactly (no normalisation): how a send
   * finds a contact with an unverified phone (docs/contacts.md "Unverified phones").
   */
  readonly findByPhone: (organizationId: OrganizationId, phone: string) => Effect.Effect<Option.Option<Contact>, StorageError>
  /**
   * Sets the given fields (`phone` in E.164, validated: it also sets `phone_valid` to
   * `true`; `null` clears a detail) and `updated_at`; a phone used by another contact of
   * the organization → `PhoneTaken`, nothing written.
   */
  readonly update: (
    organizationId: OrganizationId,
    id: ContactId,
    patch: {
      readonly phone?: string
      readonly details: Partial<ContactDetails>
      /** `null` clears the contact's marketing opt-out (docs/broadcasts.md "Opt-outs"). */
      readonly marketing_opt_out_at?: null
    },
    now: string
  ) => Effect.Effect<ContactUpdateOutcome, StorageError>
  /**
   * Records that the contact opted out of marketing messages (Meta's 131050): sets
   * `marketing_opt_out_at` = `at` when it is `null` (the first opt-out is kept) and
   * answers whether it was written; `false` too when there is no such contact
   * (docs/broadcasts.md "Opt-outs"). `updated_at` is not moved.
   */
  readonly markMarketingOptOut: (organizationId: OrganizationId, id: ContactId, at: string) => Effect.Effect<boolean, StorageError>
  /** Deletes the contact with its group memberships and labels; `false` when none. */
  readonly delete: (organizationId: OrganizationId, id: ContactId) => Effect.Effect<boolean, StorageError>
  /** The labels the contact carries, by name; `None` when there is no such contact. */
  readonly labelsOf: (
    organizationId: OrganizationId,
    id: ContactId
  ) => Effect.Effect<Option.Option<ReadonlyArray<Label>>, StorageError>
}
