import { Context, Effect, Layer, Option } from "effect"
import type { ContactId } from "../model/contacts.js"
import { InvalidInput, PlanLimitExceeded, RecordNotFound, UniqueValueTaken } from "../model/commonErrors.js"
import { validName } from "../model/names.js"
import { nowIso } from "../internal/time.js"
import type { OrganizationId } from "../model/organizations.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { Page, PageRequest } from "../model/common.js"
import type { StorageError } from "../storage/errors.js"
import { Storage } from "../storage/Storage.js"
import { DEFAULT_LABEL_COLOR, type Label, type LabelId } from "../model/labels.js"

/**
 * Result of {@link LabelsService.deleteMany} (docs/contacts.md "Rules").
 *
 * @category models
 */
export interface LabelBulkDeleteResult {
  readonly deleted: number
  readonly tag_uuids: ReadonlyArray<LabelId>
  readonly not_found: ReadonlyArray<LabelId>
}

/**
 * Result of {@link LabelsService.assign}: `assigned` is the number of distinct contacts
 * that carry the label after the call among those given (the same on a repeated call).
 *
 * @category models
 */
export interface LabelAssignResult {
  readonly tag_uuid: LabelId
  readonly assigned: number
  readonly contact_uuids: ReadonlyArray<ContactId>
}

/** Most contact uuids in one assignment and label uuids in one bulk delete (docs/contacts.md "Endpoints"). */
export const MAX_UUIDS_PER_REQUEST = 1000

/**
 * Labels (contact tags) of an organization (`/labels`, docs/contacts.md).
 *
 * @category services
 */
export interface LabelsService {
  /**
   * Creates a label. `color` is `#rgb` or `#rrggbb` (stored lowercase), default
   * `#808080`. Fails with `UniqueValueTaken` (`label_name_taken`) or, when the
   * organization already has `label_limit` labels, `PlanLimitExceeded`.
   */
  readonly create: (
    organizationId: OrganizationId,
    input: { readonly name: string; readonly color?: string | undefined }
  ) => Effect.Effect<Label, InvalidInput | UniqueValueTaken | PlanLimitExceeded | StorageError>
  /** One label. */
  readonly get: (organizationId: OrganizationId, id: LabelId) => Effect.Effect<Label, RecordNotFound | StorageError>
  /** One page of labels, newest first (an extension: docs/contacts.md "Endpoints"). */
  readonly list: (organizationId: OrganizationId, page: PageRequest) => Effect.Effect<Page<Label>, StorageError>
  /** Deletes a label and its assignments. */
  readonly delete: (organizationId: OrganizationId, id: LabelId) => Effect.Effect<void, RecordNotFound | StorageError>
  /** Deletes this organization's labels among `ids` (idempotent); reports the others. */
  readonly deleteMany: (
    organizationId: OrganizationId,
    ids: ReadonlyArray<LabelId>
  ) => Effect.Effect<LabelBulkDeleteResult, InvalidInput | StorageError>
  /**
   * Puts the label on the contacts (idempotent), all or nothing: an unknown label or
   * contact → `RecordNotFound` with one entry per uuid.
   */
  readonly assign: (
    organizationId: OrganizationId,
    id: LabelId,
    contactIds: ReadonlyArray<ContactId>
  ) => Effect.Effect<LabelAssignResult, InvalidInput | RecordNotFound | StorageError>
}

/**
 * Tag of the {@link LabelsService}.
 *
 * @category services
 */
export class Labels extends Context.Tag("@switchboard/core/Labels")<Labels, LabelsService>() {
  static readonly layer: Layer.Layer<Labels, never, Storage | SecureRandom> = Layer.effect(
    Labels,
    Effect.suspend(() => make)
  )
}

const HEX_COLOR = /^#(?:[0-9a-f]{3}|[0-9a-f]{6})$/i

const notFound = (id: string) => new RecordNotFound({ missing: [{ resource: "label", uuid: id }] })

const countIssue = (field: string, count: number) =>
  count < 1 || count > MAX_UUIDS_PER_REQUEST
    ? Effect.fail(
        new InvalidInput({
          issues: [{ code: "out_of_range", field, message: `${field} must hold 1 to ${MAX_UUIDS_PER_REQUEST} uuids` }]
        })
      )
    : Effect.void

const make = Effect.gen(function* () {
  const storage = yield* Storage
  const random = yield* SecureRandom

  const create = Effect.fn("Labels.create")(function* (
    organizationId: OrganizationId,
    input: { readonly name: string; readonly color?: string | undefined }
  ) {
    const name = yield* validName(input.name)
    const color = (input.color ?? DEFAULT_LABEL_COLOR).trim().toLowerCase()
    if (!HEX_COLOR.test(color)) {
      return yield* new InvalidInput({
        issues: [{ code: "invalid_format", field: "color", message: "color must be a CSS hex color such as #1e90ff" }]
      })
    }
    const organization = yield* storage.organizations.findById(organizationId)
    const labelLimit = Option.match(organization, { onNone: () => 0, onSome: (org) => org.plan.label_limit })
    const uuid = (yield* random.uuid()) as LabelId
    const outcome = yield* storage.labels.create(organizationId, { uuid, name, color, now: yield* nowIso }, labelLimit)
    switch (outcome._tag) {
      case "Created":
        return outcome.label
      case "NameTaken":
        return yield* new UniqueValueTaken({ code: "label_name_taken", field: "name", value: name })
      case "LimitExceeded":
        return yield* new PlanLimitExceeded({ plan_limit: "label_limit", limit: outcome.limit, usage: outcome.usage, requested: 1 })
    }
  })

  const deleteMany = Effect.fn("Labels.deleteMany")(function* (organizationId: OrganizationId, ids: ReadonlyArray<LabelId>) {
    yield* countIssue("tag_uuids", ids.length)
    const unique = [...new Set(ids)]
    const deleted = new Set(yield* storage.labels.deleteMany(organizationId, unique))
    const result: LabelBulkDeleteResult = {
      deleted: deleted.size,
      tag_uuids: unique.filter((id) => deleted.has(id)),
      not_found: unique.filter((id) => !deleted.has(id))
    }
    return result
  })

  const assign = Effect.fn("Labels.assign")(function* (
    organizationId: OrganizationId,
    id: LabelId,
    contactIds: ReadonlyArray<ContactId>
  ) {
    yield* countIssue("contact_uuids", contactIds.length)
    const unique = [...new Set(contactIds)]
    const outcome = yield* storage.labels.assign(organizationId, id, unique, yield* nowIso)
    if (outcome._tag === "NotFound") {
      return yield* new RecordNotFound({
        missing: [
          ...(outcome.label ? [{ resource: "label" as const, uuid: id, field: "tag_uuid" }] : []),
          ...outcome.contacts.map((uuid) => ({ resource: "contact" as const, uuid, field: "contact_uuids" }))
        ]
      })
    }
    const result: LabelAssignResult = { tag_uuid: id, assigned: unique.length, contact_uuids: unique }
    return result
  })

  const service: LabelsService = {
    create,
    get: (organizationId, id) =>
      Effect.flatMap(storage.labels.findById(organizationId, id), (label) =>
        Option.match(label, { onNone: () => notFound(id), onSome: Effect.succeed })
      ),
    list: (organizationId, page) => storage.labels.list(organizationId, page),
    delete: (organizationId, id) =>
      Effect.flatMap(storage.labels.deleteMany(organizationId, [id]), (deleted) =>
        deleted.length === 1 ? Effect.void : notFound(id)
      ),
    deleteMany,
    assign
  }
  return service
})
