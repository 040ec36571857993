import { Option } from "effect"
import {
  type ContactId,
  type LabelAssignOutcome,
  type LabelCreateOutcome,
  type LabelId,
  type LabelRepository,
  nameKey
} from "@switchboard/core"
import { attempt, isDuplicateKey } from "../internal/driver.js"
import { anyOf, byKeys, ofOrganization, owned, ownedAmong, pageOptions } from "../internal/queries.js"
import { labelRecords } from "../internal/records.js"
import type { Collections } from "../internal/schema.js"
import type { Usage } from "../internal/usage.js"

/**
 * `Storage.labels` on MongoDB: collection `labels` (names unique per organization by the
 * unique index on `(organization_id, name_key)`); assignments are the `label_ids` array of
 * each contact. `create` checks `label_limit` with a conditional `$inc` on the
 * organization's usage document (reserve, insert, release on failure: see usage.ts);
 * `deleteMany` deletes the labels, then pulls them from contacts, then releases their slots.
 *
 * @category repositories
 */
export const labelRepository = (collections: Collections, usage: Usage): LabelRepository => {
  const record = async (organizationId: string, id: string) => {
    const document = await collections.labels.findOne(owned(organizationId, id))
    return document === null ? undefined : (await labelRecords(collections, organizationId, [document]))[0]
  }
  return {
    create: (organizationId, { uuid, name, color, now }, labelLimit) =>
      attempt("labels.create", async (): Promise<LabelCreateOutcome> => {
        const key = nameKey(name)
        if ((await collections.labels.countDocuments(byKeys(organizationId, "name_key", [key]), { limit: 1 })) > 0) {
          return { _tag: "NameTaken" }
        }
        const reservation = await usage.reserve(organizationId, "labels", 1, labelLimit)
        if (!reservation.reserved) return { _tag: "LimitExceeded", limit: labelLimit ?? 0, usage: reservation.usage }
        try {
          await collections.labels.insertOne({ _id: uuid, organization_id: organizationId, name, name_key: key, color, created_at: now, updated_at: now })
        } catch (error) {
          await usage.add(organizationId, "labels", -1)
          if (isDuplicateKey(error)) return { _tag: "NameTaken" }
          throw error
        }
        return { _tag: "Created", label: { uuid, name, color, contacts_count: 0, created_at: now, updated_at: now } }
      }),
    findById: (organizationId, id) => attempt("labels.findById", async () => Option.fromNullable(await record(organizationId, id))),
    findByNames: (organizationId, names) =>
      attempt("labels.findByNames", async () => {
        if (names.length === 0) return []
        const documents = await collections.labels.find(byKeys(organizationId, "name_key", names.map(nameKey))).toArray()
        return labelRecords(collections, organizationId, documents)
      }),
    list: (organizationId, page) =>
      attempt("labels.list", async () => {
        const [documents, total] = await Promise.all([
          collections.labels.find(ofOrganization(organizationId), pageOptions(page)).toArray(),
          collections.labels.countDocuments(ofOrganization(organizationId))
        ])
        return { items: await labelRecords(collections, organizationId, documents), total }
      }),
    deleteMany: (organizationId, ids) =>
      attempt("labels.deleteMany", async () => {
        const found = await collections.labels.find(ownedAmong(organizationId, ids), { projection: { _id: 1 } }).toArray()
        if (found.length === 0) return []
        const deleted = found.map((d) => d._id as LabelId)
        await usage.touch(organizationId)
        const result = await collections.labels.bulkWrite(
          deleted.map((id) => ({ deleteOne: { filter: owned(organizationId, id) } })),
          { ordered: false }
        )
        await collections.contacts.updateMany(
          { ...ofOrganization(organizationId), label_ids: anyOf(deleted) },
          { $pull: { label_ids: anyOf(deleted) } }
        )
        if (result.deletedCount > 0) await usage.add(organizationId, "labels", -result.deletedCount)
        return deleted
      }),
    assign: (organizationId, id, contactIds) =>
      attempt("labels.assign", async (): Promise<LabelAssignOutcome> => {
        const wanted = [...new Set(contactIds)]
        const [label, found] = await Promise.all([
          collections.labels.countDocuments(owned(organizationId, id), { limit: 1 }),
          wanted.length === 0
            ? []
            : collections.contacts.find(ownedAmong(organizationId, wanted), { projection: { _id: 1 } }).toArray()
        ])
        const present = new Set(found.map((d) => d._id))
        const missing = wanted.filter((contactId) => !present.has(contactId)) as Array<ContactId>
        if (label === 0 || missing.length > 0) return { _tag: "NotFound", label: label === 0, contacts: missing }
        if (wanted.length > 0) {
          await collections.contacts.updateMany(ownedAmong(organizationId, wanted), { $addToSet: { label_ids: id } })
        }
        return { _tag: "Assigned" }
      })
  }
}
