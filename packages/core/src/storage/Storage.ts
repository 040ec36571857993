import { Context, type Effect, type Option } from "effect"
import type { ApiKey, ApiKeyId, Organization, OrganizationId } from "../model/organizations.js"
import type { StorageError } from "./errors.js"
import type { BasicReplyRepository } from "./BasicReplyRepository.js"
import type { BroadcastRepository } from "./BroadcastRepository.js"
import type { ChannelRepository } from "./ChannelRepository.js"
import type { ChatRepository } from "./ChatRepository.js"
import type { IdempotencyRepository } from "./IdempotencyRepository.js"
import type { OutboxRepository } from "./OutboxRepository.js"
import type { TemplateRepository } from "./TemplateRepository.js"
import type { WebhookRejectRepository } from "./WebhookRejectRepository.js"
import type { WebhookRepository } from "./WebhookRepository.js"
import type {
  Contact,
  ContactDetails,
  ContactId,
  ContactImportResult,
  ContactImportRow
} from "../model/contacts.js"
import type { Group, GroupId } from "../model/groups.js"
import type { Label, LabelId } from "../model/labels.js"
import type { Page, PageRequest } from "../model/common.js"

/**
 * An API key together with the organization it belongs to, as found by its hash.
 *
 * @category storage
 */
export interface StoredCredential {
  readonly api_key: ApiKey
  readonly organization: Organization
}

/**
 * Organizations and their API keys. The one repository that reads across organizations
 * (authentication finds a key by its hash; the admin CLI lists organizations).
 * Every method fails only with {@link StorageError}.
 *
 * @category storage
 */
export interface OrganizationRepository {
  /** Inserts a new organization. */
  readonly insert: (organization: Organization) => Effect.Effect<void, StorageError>
  /** Replaces the stored organization with the same id; `false` when there is none. */
  readonly replace: (organization: Organization) => Effect.Effect<boolean, StorageError>
  /** The organization with this id. */
  readonly findById: (id: OrganizationId) => Effect.Effect<Option.Option<Organization>, StorageError>
  /** Every organization, oldest first. */
  readonly list: () => Effect.Effect<ReadonlyArray<Organization>, StorageError>
  /** Inserts a new API key (its hash, never the key). */
  readonly insertApiKey: (apiKey: ApiKey) => Effect.Effect<void, StorageError>
  /** The API key with this id. */
  readonly findApiKeyById: (id: ApiKeyId) => Effect.Effect<Option.Option<ApiKey>, StorageError>
  /**
   * Sets `revoked_at` on the key when it is not revoked yet, and returns the key as stored
   * afterwards (revoking twice keeps the first time).
   */
  readonly revokeApiKey: (
    id: ApiKeyId,
    revokedAt: string
  ) => Effect.Effect<Option.Option<ApiKey>, StorageError>
  /**
   * The key whose SHA-256 hash (lowercase hex) is `hash`, revoked or not, with its
   * organization: one look-up for every authenticated request.
   */
  readonly findCredentialByHash: (
    hash: string
  ) => Effect.Effect<Option.Option<StoredCredential>, StorageError>
}

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

/**
 * Outcome of creating or renaming a group.
 *
 * @category storage
 */
export type GroupWriteOutcome =
  | { readonly _tag: "Written"; readonly group: Group }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "NameTaken" }

/**
 * Contact groups (audiences) of one organization. Names are unique per organization,
 * compared with {@link nameKey} (trimmed, lowercase).
 *
 * @category storage
 */
export interface GroupRepository {
  /** Inserts a group with `contacts_count` 0; `NameTaken` when the name is used. */
  readonly create: (
    organizationId: OrganizationId,
    group: { readonly uuid: GroupId; readonly name: string; readonly now: string }
  ) => Effect.Effect<GroupWriteOutcome, StorageError>
  /** Renames a group and sets `updated_at`; `NotFound` or `NameTaken` write nothing. */
  readonly rename: (
    organizationId: OrganizationId,
    id: GroupId,
    name: string,
    now: string
  ) => Effect.Effect<GroupWriteOutcome, StorageError>
  /** The group with this uuid. */
  readonly findById: (organizationId: OrganizationId, id: GroupId) => Effect.Effect<Option.Option<Group>, StorageError>
  /** The groups whose names match any of `names` by {@link nameKey}, in no particular order. */
  readonly findByNames: (
    organizationId: OrganizationId,
    names: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<Group>, StorageError>
  /** One page of groups, newest first, with the total. */
  readonly list: (organizationId: OrganizationId, page: PageRequest) => Effect.Effect<Page<Group>, StorageError>
}

/**
 * Outcome of creating a label.
 *
 * @category storage
 */
export type LabelCreateOutcome =
  | { readonly _tag: "Created"; readonly label: Label }
  | { readonly _tag: "NameTaken" }
  | { readonly _tag: "LimitExceeded"; readonly limit: number; readonly usage: number }

/**
 * Outcome of assigning a label to contacts. `NotFound` lists what is missing and
 * changed nothing.
 *
 * @category storage
 */
export type LabelAssignOutcome =
  | { readonly _tag: "Assigned" }
  | { readonly _tag: "NotFound"; readonly label: boolean; readonly contacts: ReadonlyArray<ContactId> }

/**
 * Labels (contact tags) of one organization. Names are unique per organization,
 * compared with {@link nameKey}.
 *
 * @category storage
 */
export interface LabelRepository {
  /**
   * Inserts a label, in one atomic step with the `label_limit` check: when the
   * organization already has `labelLimit` labels or more → `LimitExceeded`, nothing
   * written.
   */
  readonly create: (
    organizationId: OrganizationId,
    label: { readonly uuid: LabelId; readonly name: string; readonly color: string; readonly now: string },
    labelLimit: number | null
  ) => Effect.Effect<LabelCreateOutcome, StorageError>
  /** The label with this uuid. */
  readonly findById: (organizationId: OrganizationId, id: LabelId) => Effect.Effect<Option.Option<Label>, StorageError>
  /** The labels whose names match any of `names` by {@link nameKey}, in no particular order. */
  readonly findByNames: (
    organizationId: OrganizationId,
    names: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<Label>, StorageError>
  /** One page of labels, newest first, with the total. */
  readonly list: (organizationId: OrganizationId, page: PageRequest) => Effect.Effect<Page<Label>, StorageError>
  /** Deletes the labels among `ids` that exist, with their assignments; returns those deleted. */
  readonly deleteMany: (
    organizationId: OrganizationId,
    ids: ReadonlyArray<LabelId>
  ) => Effect.Effect<ReadonlyArray<LabelId>, StorageError>
  /**
   * Puts the label on every contact in `contactIds` that does not carry it yet
   * (idempotent), all or nothing: an unknown label or contact → `NotFound`.
   */
  readonly assign: (
    organizationId: OrganizationId,
    id: LabelId,
    contactIds: ReadonlyArray<ContactId>,
    now: string
  ) => Effect.Effect<LabelAssignOutcome, StorageError>
}

/**
 * What {@link StorageService.health} reports once the store answered
 * (docs/deployment.md "Health checks"): `migrations_current` is `true` when the store's
 * schema is the version this adapter expects (none pending, none newer); otherwise
 * `detail` says why in one line (versions, never a secret or a connection string).
 *
 * @category storage
 */
export interface StorageHealth {
  readonly migrations_current: boolean
  readonly detail?: string
}

/**
 * The storage interface: one repository per domain. Adapters (memory in
 * `@switchboard/core`, SQLite, MongoDB) provide it; `@switchboard/storage-contract` is
 * the suite every adapter must pass.
 *
 * @category storage
 */
export interface StorageService {
  readonly organizations: OrganizationRepository
  readonly contacts: ContactRepository
  readonly groups: GroupRepository
  readonly labels: LabelRepository
  readonly chats: ChatRepository
  readonly templates: TemplateRepository
  readonly basicReplies: BasicReplyRepository
  readonly idempotency: IdempotencyRepository
  readonly channels: ChannelRepository
  readonly webhooks: WebhookRepository
  readonly webhookRejects: WebhookRejectRepository
  readonly outbox: OutboxRepository
  readonly broadcasts: BroadcastRepository
  /**
   * A cheap read proving the store answers (SQLite: a read that WAL mode never blocks;
   * PostgreSQL and MongoDB: one round trip) and whether its schema is current. Fails with
   * {@link StorageError} when the store does not answer; the caller bounds the wait
   * (readiness gives it 1 s, docs/deployment.md "Health checks").
   */
  readonly health: () => Effect.Effect<StorageHealth, StorageError>
}

/**
 * Tag of the {@link StorageService}.
 *
 * @category storage
 */
export class Storage extends Context.Tag("@switchboard/core/Storage")<Storage, StorageService>() {}
