import { Context, Effect, Layer, Option } from "effect"
import { readImportRow, mergeRowsByPhone } from "../contacts/importRows.js"
import type { ContactId, ContactImportInput } from "../model/contacts.js"
import {
  contactsLimitExceeded,
  InvalidInput,
  PlanLimitExceeded,
  RecordNotFound,
  UniqueValueTaken
} from "../model/commonErrors.js"
import type { GroupId } from "../model/groups.js"
import { nowIso } from "../internal/time.js"
import { arrayAt, isRecord, IssueCollector } from "../internal/validation.js"
import { Labels } from "../labels/Labels.js"
import { DEFAULT_LABEL_COLOR, type LabelId } from "../model/labels.js"
import type { OrganizationId } from "../model/organizations.js"
import { SecureRandom } from "../random/SecureRandom.js"
import { Settings } from "../common/Settings.js"
import type { StorageError } from "../storage/errors.js"
import { Storage } from "../storage/Storage.js"
import type { ChatId } from "../model/chats.js"
import { readChats, writeChats } from "./chats.js"
import { readTemplatesAndReplies, type TemplatesAndRepliesResult, writeTemplatesAndReplies } from "./templatesAndReplies.js"
import { nameKey } from "../model/names.js"

/**
 * What an import created or matched (docs/import.md): uuids by group name, label
 * name and contact phone, each key as written in the file; templates by `"name/language"`
 * and basic replies by trigger ({@link TemplatesAndRepliesResult}); chat uuids by phone as
 * written in the `chats` entries.
 *
 * @category models
 */
export interface ImportResult extends TemplatesAndRepliesResult {
  readonly groups: Readonly<Record<string, GroupId>>
  readonly labels: Readonly<Record<string, LabelId>>
  readonly contacts: Readonly<Record<string, ContactId>>
  readonly chats: Readonly<Record<string, ChatId>>
}

/**
 * Imports an organization's data from one JSON document (docs/import.md,
 * docs/import.md): `groups`, `labels`, `contacts`, `templates`, `basic_replies` and `chats`
 * (with their messages), every key optional.
 *
 * @category services
 */
export interface ImportsService {
  /**
   * Validates the whole document first — every problem reported at once as
   * `InvalidInput` with JSON paths such as `contacts[3].phone` — and checks the plan
   * limits, so a rejected import writes nothing. Contacts are upserted by phone with their
   * groups in one atomic store step; names in `group` and `labels` that the file does not
   * list at the top are created. Existing groups and labels with the same name
   * (case-insensitively) are matched, not duplicated.
   *
   * A chat's phone names its contact: a phone the `contacts` key does not list creates a
   * contact with that phone only, in the same store step as the other contacts (so it
   * counts against `contacts_limit`: `PlanLimitExceeded`, nothing written). Chats are
   * matched by contact: a re-import sets the attributes given and appends only the
   * messages the chat does not hold yet (same direction, type, text and `created_at`), so
   * importing one file twice adds no message (`ChatRepository.importChats`).
   */
  readonly importDocument: (
    organizationId: OrganizationId,
    document: unknown
  ) => Effect.Effect<ImportResult, InvalidInput | PlanLimitExceeded | StorageError>
}

/**
 * Tag of the {@link ImportsService}.
 *
 * @category services
 */
export class Imports extends Context.Tag("@switchboard/core/Imports")<Imports, ImportsService>() {
  static readonly layer: Layer.Layer<Imports, never, Storage | SecureRandom | Labels> = Layer.effect(
    Imports,
    Effect.suspend(() => make)
  )
}

interface ReadDocument {
  readonly groupNames: ReadonlyArray<string>
  readonly labels: ReadonlyMap<string, { readonly name: string; readonly color: string }>
  readonly contacts: ReadonlyArray<{ readonly phoneAsGiven: string; readonly labelNames: ReadonlyArray<string> }>
  readonly rows: ReturnType<typeof mergeRowsByPhone>
  readonly phones: ReadonlyArray<string>
}

const make = Effect.gen(function* () {
  const storage = yield* Storage
  const random = yield* SecureRandom
  const labels = yield* Labels

  const importDocument = Effect.fn("Imports.importDocument")(function* (organizationId: OrganizationId, document: unknown) {
    const { defaultCountry } = yield* Settings
    const collector = new IssueCollector()
    const chats = readChats(collector, document, defaultCountry)
    const read = readDocument(collector, document, defaultCountry, chats.chats.map((chat) => chat.phone))
    const templatesAndReplies = readTemplatesAndReplies(collector, document, defaultCountry)
    if (collector.issues.length > 0) return yield* new InvalidInput({ issues: collector.issues })
    const organization = yield* storage.organizations.findById(organizationId)
    const plan = Option.map(organization, (org) => org.plan)
    const labelLimit = Option.match(plan, { onNone: () => 0, onSome: (p) => p.label_limit })
    const contactsLimit = Option.match(plan, { onNone: () => 0, onSome: (p) => p.contacts_limit })

    const existingLabels = yield* storage.labels.findByNames(organizationId, [...read.labels.values()].map((l) => l.name))
    const newLabels = [...read.labels.keys()].filter((key) => !existingLabels.some((label) => nameKey(label.name) === key))
    if (labelLimit !== null && newLabels.length > 0) {
      const usage = (yield* storage.labels.list(organizationId, { page: 1, per_page: 1 })).total
      if (usage + newLabels.length > labelLimit) {
        return yield* new PlanLimitExceeded({ plan_limit: "label_limit", limit: labelLimit, usage, requested: newLabels.length })
      }
    }

    const ids = yield* random.uuids(read.rows.rows.length + read.rows.groupNames)
    const outcome = yield* storage.contacts.importBulk(organizationId, {
      rows: read.rows.rows,
      ids,
      contactsLimit,
      now: yield* nowIso,
      // An administrator's import of a file writes no webhook events (docs/webhooks.md).
      events: false
    })
    if (outcome._tag === "LimitExceeded") {
      return yield* contactsLimitExceeded(outcome)
    }
    if (outcome._tag === "GroupsNotFound") {
      return yield* new InvalidInput({
        issues: outcome.uuids.map((uuid) => ({ code: "group_not_found", field: read.rows.groupFields.get(uuid) ?? "contacts", message: `No group with uuid ${uuid}` }))
      })
    }
    const contactIds = new Map(outcome.result.contacts.map((entry) => [entry.phone, entry.uuid]))

    const groups = yield* ensureGroups(organizationId, read.groupNames)
    const labelIds = yield* ensureLabels(organizationId, read.labels)
    yield* assignLabels(organizationId, read, contactIds, labelIds)
    const written = yield* writeTemplatesAndReplies(storage, random, organizationId, templatesAndReplies)
    const chatIds = yield* writeChats(storage, random, organizationId, chats, contactIds, yield* nowIso)
    return {
      groups,
      labels: Object.fromEntries([...read.labels.values()].map(({ name }) => [name, labelIds.get(nameKey(name)) as LabelId])),
      contacts: Object.fromEntries(read.contacts.map((contact, index) => [contact.phoneAsGiven, contactIds.get(read.phones[index] ?? "") as ContactId])),
      ...written,
      chats: chatIds
    } satisfies ImportResult
  })

  /** Every group the document names, created when missing; uuids by name as written. */
  const ensureGroups = (organizationId: OrganizationId, names: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const found = new Map((yield* storage.groups.findByNames(organizationId, names)).map((group) => [nameKey(group.name), group.uuid]))
      for (const name of names) {
        if (found.has(nameKey(name))) continue
        const uuid = (yield* random.uuid()) as GroupId
        const outcome = yield* storage.groups.create(organizationId, { uuid, name, now: yield* nowIso })
        if (outcome._tag === "Written") found.set(nameKey(name), uuid)
      }
      return Object.fromEntries(names.map((name) => [name, found.get(nameKey(name)) as GroupId]))
    })

  /** Every label the document names, created when missing; uuids by name key. */
  const ensureLabels = (organizationId: OrganizationId, wanted: ReadDocument["labels"]) =>
    Effect.gen(function* () {
      const found = new Map(
        (yield* storage.labels.findByNames(organizationId, [...wanted.values()].map((l) => l.name))).map((label) => [nameKey(label.name), label.uuid])
      )
      for (const [key, label] of wanted) {
        if (found.has(key)) continue
        const created = yield* labels.create(organizationId, label).pipe(
          Effect.catchTag("UniqueValueTaken", (error: UniqueValueTaken) => Effect.die(error))
        )
        found.set(key, created.uuid)
      }
      return found
    })

  const assignLabels = (
    organizationId: OrganizationId,
    read: ReadDocument,
    contactIds: ReadonlyMap<string, ContactId>,
    labelIds: ReadonlyMap<string, LabelId>
  ) =>
    Effect.gen(function* () {
      const carriers = new Map<LabelId, Array<ContactId>>()
      read.contacts.forEach((contact, index) => {
        const contactId = contactIds.get(read.phones[index] ?? "")
        for (const name of contact.labelNames) {
          const labelId = labelIds.get(nameKey(name))
          if (labelId === undefined || contactId === undefined) continue
          carriers.set(labelId, [...(carriers.get(labelId) ?? []), contactId])
        }
      })
      for (const [labelId, contacts] of carriers) {
        const outcome = yield* storage.labels.assign(organizationId, labelId, [...new Set(contacts)], yield* nowIso)
        if (outcome._tag === "NotFound") {
          return yield* Effect.die(new RecordNotFound({ missing: [{ resource: "label", uuid: labelId }] }))
        }
      }
    })

  return { importDocument } satisfies ImportsService
})

/**
 * Reads and checks the whole document, collecting every issue. `chatPhones` (E.164) are
 * added as contact rows without details, after the `contacts` rows: upserted with them.
 */
const readDocument = (
  collector: IssueCollector,
  document: unknown,
  defaultCountry: Parameters<typeof readImportRow>[3],
  chatPhones: ReadonlyArray<string>
): ReadDocument => {
  const root = isRecord(document) ? document : (collector.add("invalid_type", "", "The import file must be a JSON object"), {})
  const groupNames: Array<string> = []
  for (const [index, group] of arrayAt(collector, root, "groups").entries()) {
    const name = collector.requiredText(`groups[${index}].name`, isRecord(group) ? group.name : undefined)
    if (name !== "" && !groupNames.some((known) => nameKey(known) === nameKey(name))) groupNames.push(name)
  }
  const labels = new Map<string, { name: string; color: string }>()
  for (const [index, label] of arrayAt(collector, root, "labels").entries()) {
    const record = isRecord(label) ? label : {}
    const name = collector.requiredText(`labels[${index}].name`, record.name)
    const color = (collector.optionalText(`labels[${index}].color`, record.color) ?? DEFAULT_LABEL_COLOR).toLowerCase()
    if (!/^#(?:[0-9a-f]{3}|[0-9a-f]{6})$/.test(color)) collector.add("invalid_format", `labels[${index}].color`, "color must be a CSS hex color")
    if (name !== "" && !labels.has(nameKey(name))) labels.set(nameKey(name), { name, color })
  }
  const contacts: Array<{ phoneAsGiven: string; labelNames: Array<string> }> = []
  const rows = arrayAt(collector, root, "contacts").map((contact, index) => {
    const record = (isRecord(contact) ? contact : {}) as ContactImportInput & { labels?: unknown }
    const row = readImportRow(collector, `contacts[${index}]`, record, defaultCountry)
    const labelNames: Array<string> = []
    for (const [position, entry] of (Array.isArray(record.labels) ? record.labels : []).entries()) {
      const name = collector.requiredText(`contacts[${index}].labels[${position}]`, entry)
      if (name === "") continue
      labelNames.push(name)
      if (!labels.has(nameKey(name))) labels.set(nameKey(name), { name, color: DEFAULT_LABEL_COLOR })
    }
    const groups = row.groups.map((reference) => {
      if (reference._tag !== "ByName") return reference
      const known = groupNames.find((name) => nameKey(name) === nameKey(reference.name))
      if (known === undefined) groupNames.push(reference.name)
      return { ...reference, name: known ?? reference.name }
    })
    contacts.push({ phoneAsGiven: typeof record.phone === "string" ? record.phone : "", labelNames })
    return { ...row, groups }
  })
  const chatRows = chatPhones.map((phone) => ({ phone, details: {}, groups: [], groupFields: [] }))
  return { groupNames, labels, contacts, rows: mergeRowsByPhone([...rows, ...chatRows]), phones: rows.map((row) => row.phone) }
}


