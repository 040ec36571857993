import { Option } from "effect"
import {
  nameKey,
  type Template,
  type TemplateContent,
  type TemplateId,
  type TemplateRepository,
  type TemplateStatusOutcome,
  type TemplateWriteOutcome
} from "@switchboard/core"
import type { TemplateDocument } from "../internal/documents.js"
import { attempt, onDuplicateKey } from "../internal/driver.js"
import { eq, ofOrganization, owned, pageOptions } from "../internal/queries.js"
import type { Collections } from "../internal/schema.js"
import { pendingEvent, subscribersOf } from "./webhooks.js"

/**
 * `Storage.templates` on MongoDB: collection `templates`; the identity (name by `nameKey`,
 * language exactly, `waba_id`: `null` for no account, one group) is unique per
 * organization through the unique index on `(organization_id, name_key, language,
 * waba_id)`, enforced by the write itself. `components` and `problems` are stored as JSON
 * text and returned as written. `findByIdentity` reads both candidates (the account's and
 * the one with no account) in one query, the account's first (`waba_id` descending: a
 * string sorts after `null`). `update` and `updateStatus` are each one
 * `findOneAndUpdate`, so `rejected_reason` follows its rules atomically; when endpoints
 * receive `template.status_updated`, `updateStatus` is instead a compare-and-set update
 * carrying the event in `pending_events` (webhooks.ts).
 *
 * @category repositories
 */
export const templateRepository = (collections: Collections): TemplateRepository => ({
  create: (organizationId, { uuid, content, now }) =>
    attempt("templates.create", () =>
      onDuplicateKey(
        async (): Promise<TemplateWriteOutcome> => {
          const document: TemplateDocument = {
            _id: uuid,
            organization_id: organizationId,
            ...contentFields(content),
            rejected_reason: content.rejected_reason ?? null,
            created_at: now,
            updated_at: now
          }
          await collections.templates.insertOne(document)
          return { _tag: "Written", template: templateRecord(document) }
        },
        () => ({ _tag: "NameTaken" }) as const
      )
    ),
  update: (organizationId, id, content, now, guard) =>
    attempt("templates.update", () =>
      onDuplicateKey(
        async (): Promise<TemplateWriteOutcome> => {
          const since = guard?.unchangedSince
          // rejected_reason as given; else kept while the template stays REJECTED, else cleared.
          const reason =
            content.rejected_reason !== undefined
              ? { rejected_reason: content.rejected_reason }
              : content.status === "REJECTED" ? {} : { rejected_reason: null }
          const document = await collections.templates.findOneAndUpdate(
            { ...owned(organizationId, id), ...(since === undefined ? {} : { updated_at: { $lte: since } }) },
            { $set: { ...contentFields(content), ...reason, updated_at: now } },
            { returnDocument: "after" }
          )
          if (document !== null) return { _tag: "Written", template: templateRecord(document) }
          if (since === undefined) return { _tag: "NotFound" }
          // Guarded: no match is either no template or one changed later.
          const current = await collections.templates.findOne(owned(organizationId, id))
          return current === null ? { _tag: "NotFound" } : { _tag: "Stale", template: templateRecord(current) }
        },
        () => ({ _tag: "NameTaken" }) as const
      )
    ),
  updateStatus: (organizationId, id, { now, rejected_reason, status, category, unchangedSince }) =>
    attempt("templates.updateStatus", async (): Promise<TemplateStatusOutcome> => {
      const eventType = category === undefined ? "template.status_updated" : "template.category_updated"
      const endpoints = (await subscribersOf(collections, organizationId))(eventType)
      if (endpoints.length > 0) {
        return updateStatusWithEvent(collections, organizationId, id, { now, rejected_reason, status, category, unchangedSince }, eventType, endpoints)
      }
      // Matches only when a field differs (a missing rejected_reason equals null), so an
      // unchanged template is never written; guarded, only while not changed later.
      const differs = {
        $or: [
          { status: { $not: eq(status) } },
          { rejected_reason: { $not: eq(rejected_reason) } },
          ...(category === undefined ? [] : [{ category: { $not: eq(category) } }])
        ]
      }
      const guarded = unchangedSince === undefined ? {} : { updated_at: { $lte: unchangedSince } }
      const updated = await collections.templates.findOneAndUpdate(
        { ...owned(organizationId, id), ...guarded, ...differs },
        { $set: { status, rejected_reason, ...(category === undefined ? {} : { category }), updated_at: now } },
        { returnDocument: "after" }
      )
      if (updated !== null) return { _tag: "Updated", template: templateRecord(updated), changed: true }
      const current = await collections.templates.findOne(owned(organizationId, id))
      if (current === null) return { _tag: "NotFound" }
      if (unchangedSince !== undefined && current.updated_at > unchangedSince) return { _tag: "Stale", template: templateRecord(current) }
      return { _tag: "Updated", template: templateRecord(current), changed: false }
    }),
  findById: (organizationId, id) =>
    attempt("templates.findById", async () =>
      Option.map(Option.fromNullable(await collections.templates.findOne(owned(organizationId, id))), templateRecord)
    ),
  findByIdentity: (organizationId, name, language, wabaId = null) =>
    attempt("templates.findByIdentity", async () => {
      const accounts = wabaId === null ? [null] : [wabaId, null]
      const filter = { ...ofOrganization(organizationId), name_key: eq(nameKey(name)), language: eq(language), waba_id: { $in: accounts } }
      return Option.map(Option.fromNullable(await collections.templates.findOne(filter, { sort: { waba_id: -1 } })), templateRecord)
    }),
  deleteUnsubmitted: (organizationId, id) =>
    attempt("templates.deleteUnsubmitted", async () =>
      (await collections.templates.deleteOne({ ...owned(organizationId, id), provider_template_id: eq(null) })).deletedCount > 0
    ),
  findByProviderId: (organizationId, providerTemplateId) =>
    attempt("templates.findByProviderId", async () => {
      const filter = { ...ofOrganization(organizationId), provider_template_id: eq(providerTemplateId) }
      return Option.map(
        Option.fromNullable(await collections.templates.findOne(filter, { sort: { created_at: 1, _id: 1 } })),
        templateRecord
      )
    }),
  list: (organizationId, page) =>
    attempt("templates.list", async () => {
      const [documents, total] = await Promise.all([
        collections.templates.find(ofOrganization(organizationId), pageOptions(page)).toArray(),
        collections.templates.countDocuments(ofOrganization(organizationId))
      ])
      return { items: documents.map(templateRecord), total }
    })
})

/**
 * `updateStatus` when endpoints receive `template.status_updated`: compare-and-set on the
 * template as read (its `updated_at`, status and reason), writing the change and the event
 * (the template record afterwards) in one single-document update; retried when another
 * write came first.
 */
const updateStatusWithEvent = async (
  collections: Collections,
  organizationId: string,
  id: string,
  { category, now, rejected_reason, status, unchangedSince }: {
    readonly now: string
    readonly rejected_reason: string | null
    readonly status: Template["status"]
    readonly category: Template["category"] | undefined
    readonly unchangedSince?: string | undefined
  },
  eventType: "template.status_updated" | "template.category_updated",
  endpoints: ReadonlyArray<string>
): Promise<TemplateStatusOutcome> => {
  for (let round = 0; round < 10; round++) {
    const current = await collections.templates.findOne(owned(organizationId, id))
    if (current === null) return { _tag: "NotFound" }
    const record = templateRecord(current)
    // The update below matches this updated_at exactly: the guard holds for the write too.
    if (unchangedSince !== undefined && current.updated_at > unchangedSince) return { _tag: "Stale", template: record }
    const newCategory = category ?? record.category
    if (record.status === status && record.rejected_reason === rejected_reason && record.category === newCategory) {
      return { _tag: "Updated", template: record, changed: false }
    }
    const template: Template = { ...record, status, rejected_reason, category: newCategory, updated_at: now }
    const result = await collections.templates.updateOne(
      { ...owned(organizationId, id), updated_at: eq(current.updated_at), status: eq(current.status), rejected_reason: eq(current.rejected_reason ?? null) },
      { $set: { status, rejected_reason, category: newCategory, updated_at: now }, $push: { pending_events: pendingEvent(eventType, now, endpoints, template) } }
    )
    if (result.matchedCount > 0) return { _tag: "Updated", template, changed: true }
  }
  throw new Error("templates.updateStatus: the template kept changing concurrently")
}

/** The stored fields of template content (components and problems as JSON text). */
const contentFields = (content: TemplateContent) => ({
  waba_id: content.waba_id,
  provider_template_id: content.provider_template_id,
  problems: JSON.stringify(content.problems),
  name: content.name,
  name_key: nameKey(content.name),
  language: content.language,
  category: content.category,
  status: content.status,
  components: JSON.stringify(content.components)
})

const templateRecord = (d: TemplateDocument): Template => ({
  uuid: d._id as TemplateId,
  waba_id: d.waba_id ?? null,
  provider_template_id: d.provider_template_id ?? null,
  name: d.name,
  language: d.language,
  category: d.category as Template["category"],
  status: d.status as Template["status"],
  rejected_reason: d.rejected_reason ?? null,
  components: JSON.parse(d.components),
  problems: d.problems === undefined ? [] : JSON.parse(d.problems),
  created_at: d.created_at,
  updated_at: d.updated_at
})
