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

/**
 * `Storage.templates` on MongoDB: collection `templates`; the identity (name by `nameKey`,
 * language exactly) is unique per organization through the unique index on
 * `(organization_id, name_key, language)`, enforced by the write itself. `components` are
 * stored as JSON text and returned as written. `update` and `updateStatus` are each one
 * `findOneAndUpdate`, so `rejected_reason` follows its rules atomically.
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
            rejected_reason: null,
            created_at: now,
            updated_at: now
          }
          await collections.templates.insertOne(document)
          return { _tag: "Written", template: templateRecord(document) }
        },
        () => ({ _tag: "NameTaken" }) as const
      )
    ),
  update: (organizationId, id, content, now) =>
    attempt("templates.update", () =>
      onDuplicateKey(
        async (): Promise<TemplateWriteOutcome> => {
          // rejected_reason is kept while the template stays REJECTED, else cleared.
          const reason = content.status === "REJECTED" ? {} : { rejected_reason: null }
          const document = await collections.templates.findOneAndUpdate(
            owned(organizationId, id),
            { $set: { ...contentFields(content), ...reason, updated_at: now } },
            { returnDocument: "after" }
          )
          return document === null ? { _tag: "NotFound" } : { _tag: "Written", template: templateRecord(document) }
        },
        () => ({ _tag: "NameTaken" }) as const
      )
    ),
  updateStatus: (organizationId, id, { now, rejected_reason, status }) =>
    attempt("templates.updateStatus", async (): Promise<TemplateStatusOutcome> => {
      // Matches only when a field differs (a missing rejected_reason equals null), so an
      // unchanged template is never written.
      const differs = { $or: [{ status: { $not: eq(status) } }, { rejected_reason: { $not: eq(rejected_reason) } }] }
      const updated = await collections.templates.findOneAndUpdate(
        { ...owned(organizationId, id), ...differs },
        { $set: { status, rejected_reason, updated_at: now } },
        { returnDocument: "after" }
      )
      if (updated !== null) return { _tag: "Updated", template: templateRecord(updated), changed: true }
      const current = await collections.templates.findOne(owned(organizationId, id))
      return current === null ? { _tag: "NotFound" } : { _tag: "Updated", template: templateRecord(current), changed: false }
    }),
  findById: (organizationId, id) =>
    attempt("templates.findById", async () =>
      Option.map(Option.fromNullable(await collections.templates.findOne(owned(organizationId, id))), templateRecord)
    ),
  findByIdentity: (organizationId, name, language) =>
    attempt("templates.findByIdentity", async () => {
      const filter = { ...ofOrganization(organizationId), name_key: eq(nameKey(name)), language: eq(language) }
      return Option.map(Option.fromNullable(await collections.templates.findOne(filter)), templateRecord)
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

/** The stored fields of template content (components as JSON text). */
const contentFields = (content: TemplateContent) => ({
  name: content.name,
  name_key: nameKey(content.name),
  language: content.language,
  category: content.category,
  status: content.status,
  components: JSON.stringify(content.components)
})

const templateRecord = (d: TemplateDocument): Template => ({
  uuid: d._id as TemplateId,
  name: d.name,
  language: d.language,
  category: d.category as Template["category"],
  status: d.status as Template["status"],
  rejected_reason: d.rejected_reason ?? null,
  components: JSON.parse(d.components),
  created_at: d.created_at,
  updated_at: d.updated_at
})
