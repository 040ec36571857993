import type { Effect, Option } from "effect"
import type { Page, PageRequest } from "../model/common.js"
import type { ContactId } from "../model/contacts.js"
import type { Label, LabelId } from "../model/labels.js"
import type { OrganizationId } from "../model/organizations.js"
import type { StorageError } from "./errors.js"

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
