import { Context, Effect, Layer, Option } from "effect"
import {
  contactsLimitExceeded,
  InvalidInput,
  type PlanLimitExceeded,
  RecordNotFound,
  UniqueValueTaken
} from "../model/commonErrors.js"
import { IssueCollector } from "../internal/validation.js"
import { nowIso } from "../internal/time.js"
import type { Label } from "../model/labels.js"
import type { OrganizationId } from "../model/organizations.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { Page, PageRequest } from "../model/common.js"
import { Settings } from "../common/Settings.js"
import type { StorageError } from "../storage/errors.js"
import { Storage } from "../storage/Storage.js"
import { mergeRowsByPhone, readImportRow } from "./importRows.js"
import type { Contact, ContactDetails, ContactId, ContactImportInput, ContactImportResult, ContactUpdateInput } from "../model/contacts.js"

/** Most rows in one bulk import (`POST /contacts/bulk`, docs/contacts.md "Endpoints"). */
export const MAX_IMPORT_ROWS = 1000

/**
 * Contacts of an organization (docs/contacts.md).
 *
 * @category services
 */
export interface ContactsService {
  /**
   * Imports 1–1000 rows, all or nothing (docs/contacts.md "Rules"): every
   * row needs `phone` (normalised to E.164) and `first_name`; rows are upserted by phone,
   * a later duplicate row wins; groups in `group` (names, or uuids of existing groups) are
   * added, missing names created. Fails with `InvalidInput` listing every bad row as
   * `contacts[i].field` (an unknown group uuid is `group_not_found`), or with
   * `PlanLimitExceeded` (`contacts_limit`) when the new contacts would pass the plan.
   */
  readonly importBulk: (
    organizationId: OrganizationId,
    rows: ReadonlyArray<ContactImportInput>
  ) => Effect.Effect<ContactImportResult, InvalidInput | PlanLimitExceeded | StorageError>
  /** One page of contacts, newest first. */
  readonly list: (organizationId: OrganizationId, page: PageRequest) => Effect.Effect<Page<Contact>, StorageError>
  /** One contact; `RecordNotFound` when the organization has none with this uuid. */
  readonly get: (organizationId: OrganizationId, id: ContactId) => Effect.Effect<Contact, RecordNotFound | StorageError>
  /**
   * Partial update (`PUT /contacts/{uuid}`, docs/contacts.md "Rules"): fields left out are kept,
   * `null` clears `last_name` or `email`, and `marketing_opt_out_at` (only `null` is taken
   * there: docs/broadcasts.md "Opt-outs"). A phone of another contact → `UniqueValueTaken`
   * (`phone_taken`).
   */
  readonly update: (
    organizationId: OrganizationId,
    id: ContactId,
    input: ContactUpdateInput
  ) => Effect.Effect<Contact, InvalidInput | RecordNotFound | UniqueValueTaken | StorageError>
  /** Deletes a contact with its memberships and labels, freeing a `contacts_limit` slot. */
  readonly delete: (organizationId: OrganizationId, id: ContactId) => Effect.Effect<void, RecordNotFound | StorageError>
  /** The labels a contact carries, by name. */
  readonly labelsOf: (
    organizationId: OrganizationId,
    id: ContactId
  ) => Effect.Effect<ReadonlyArray<Label>, RecordNotFound | StorageError>
}

/**
 * Tag of the {@link ContactsService}; `Contacts.layer` needs `Storage` and `SecureRandom`.
 *
 * @category services
 */
export class Contacts extends Context.Tag("@switchboard/core/Contacts")<Contacts, ContactsService>() {
  static readonly layer: Layer.Layer<Contacts, never, Storage | SecureRandom> = Layer.effect(
    Contacts,
    Effect.suspend(() => make)
  )
}

const notFound = (id: string) => new RecordNotFound({ missing: [{ resource: "contact", uuid: id }] })

const make = Effect.gen(function* () {
  const storage = yield* Storage
  const random = yield* SecureRandom

  const importBulk = Effect.fn("Contacts.importBulk")(function* (
    organizationId: OrganizationId,
    inputs: ReadonlyArray<ContactImportInput>
  ) {
    if (inputs.length < 1 || inputs.length > MAX_IMPORT_ROWS) {
      return yield* new InvalidInput({
        issues: [{ code: "out_of_range", field: "contacts", message: `contacts must hold 1 to ${MAX_IMPORT_ROWS} rows` }]
      })
    }
    const { defaultCountry } = yield* Settings
    const collector = new IssueCollector()
    const rows = inputs.map((input, index) => readImportRow(collector, `contacts[${index}]`, input, defaultCountry))
    if (collector.issues.length > 0) return yield* new InvalidInput({ issues: collector.issues })
    const merged = mergeRowsByPhone(rows)
    const organization = yield* storage.organizations.findById(organizationId)
    // An organization that does not exist may create nothing.
    const contactsLimit = Option.match(organization, { onNone: () => 0, onSome: (org) => org.plan.contacts_limit })
    const ids = yield* random.uuids(merged.rows.length + merged.groupNames)
    const outcome = yield* storage.contacts.importBulk(organizationId, {
      rows: merged.rows,
      ids,
      contactsLimit,
      now: yield* nowIso
    })
    switch (outcome._tag) {
      case "Imported":
        return outcome.result
      case "LimitExceeded":
        return yield* contactsLimitExceeded(outcome)
      case "GroupsNotFound":
        return yield* new InvalidInput({
          issues: outcome.uuids.map((uuid) => ({
            code: "group_not_found",
            field: merged.groupFields.get(uuid) ?? "contacts",
            message: `No group with uuid ${uuid}`
          }))
        })
    }
  })

  const get = Effect.fn("Contacts.get")(function* (organizationId: OrganizationId, id: ContactId) {
    const found = yield* storage.contacts.findById(organizationId, id)
    if (Option.isNone(found)) return yield* notFound(id)
    return found.value
  })

  const update = Effect.fn("Contacts.update")(function* (
    organizationId: OrganizationId,
    id: ContactId,
    input: ContactUpdateInput
  ) {
    const { defaultCountry } = yield* Settings
    const collector = new IssueCollector()
    const details: { -readonly [K in keyof ContactDetails]?: ContactDetails[K] } = {}
    if (input.first_name !== undefined) details.first_name = collector.requiredText("first_name", input.first_name)
    if (input.last_name !== undefined) details.last_name = collector.optionalText("last_name", input.last_name)
    if (input.email !== undefined) details.email = collector.email("email", input.email)
    const phone = input.phone === undefined ? undefined : collector.phone("phone", input.phone, defaultCountry)
    const optOut = input.marketing_opt_out_at
    if (optOut !== undefined && optOut !== null) {
      collector.add("invalid_format", "marketing_opt_out_at", "marketing_opt_out_at can only be cleared: send null")
    }
    if (collector.issues.length > 0) return yield* new InvalidInput({ issues: collector.issues })
    const outcome = yield* storage.contacts.update(
      organizationId,
      id,
      {
        details,
        ...(phone === undefined ? {} : { phone }),
        ...(optOut === null ? { marketing_opt_out_at: null } : {})
      },
      yield* nowIso
    )
    switch (outcome._tag) {
      case "Updated":
        return outcome.contact
      case "NotFound":
        return yield* notFound(id)
      case "PhoneTaken":
        return yield* new UniqueValueTaken({ code: "phone_taken", field: "phone", value: phone ?? "" })
    }
  })

  const service: ContactsService = {
    importBulk,
    list: (organizationId, page) => storage.contacts.list(organizationId, page),
    get,
    update,
    delete: (organizationId, id) =>
      Effect.flatMap(storage.contacts.delete(organizationId, id), (deleted) => (deleted ? Effect.void : notFound(id))),
    labelsOf: (organizationId, id) =>
      Effect.flatMap(storage.contacts.labelsOf(organizationId, id), (labels) =>
        Option.match(labels, { onNone: () => notFound(id), onSome: Effect.succeed })
      )
  }
  return service
})
