import { Option } from "effect"
import type { ContactRepository, ContactUpdateOutcome } from "@switchboard/core"
import type { ContactDocument } from "../internal/documents.js"
import { attempt, onDuplicateKey } from "../internal/driver.js"
import { CONTACT_PROJECTION, contactByPhone, contactUpdatePipeline, eq, ofOrganization, owned, ownedAmong, pageOptions } from "../internal/queries.js"
import { byName, contactRecords, labelRecords } from "../internal/records.js"
import type { Collections } from "../internal/schema.js"
import type { Usage } from "../internal/usage.js"
import { importBulk } from "./contactsImport.js"
import { markContactMediaDeleted } from "./media.js"

/**
 * `Storage.contacts` on MongoDB: collection `contacts`, one document per contact holding
 * its group and label uuids and its chat, so every change to one contact is one atomic
 * document write. The unique index `(organization_id, phone)` keeps phones unique per
 * organization (`update` to a taken phone is refused by it: `PhoneTaken`, nothing
 * written). `markMarketingOptOut` is one update conditional on `marketing_opt_out_at` being
 * `null` (or absent), so the first opt-out is kept. `importBulk` is in contactsImport.ts. `delete` removes the contact (and with
 * it its memberships and chat), then the chat's messages, then marks the contact's media
 * `deleted` (media.ts `markContactMediaDeleted`: blobs pending removal, fetch jobs ended,
 * stored bytes given back, no event), then releases its plan slot. A crash midway leaves
 * the later steps undone (media of a deleted contact stay as they were, until retention).
 *
 * @category repositories
 */
export const contactRepository = (collections: Collections, usage: Usage): ContactRepository => ({
  importBulk: (organizationId, request) => attempt("contacts.importBulk", () => importBulk(collections, usage, organizationId, request)),
  list: (organizationId, page) =>
    attempt("contacts.list", async () => {
      const [documents, total] = await Promise.all([
        collections.contacts.find(ofOrganization(organizationId), { ...pageOptions(page), projection: CONTACT_PROJECTION }).toArray(),
        collections.contacts.countDocuments(ofOrganization(organizationId))
      ])
      return { items: await contactRecords(collections, organizationId, documents as Array<ContactDocument>), total }
    }),
  findById: (organizationId, id) =>
    attempt("contacts.findById", async () => {
      const document = await collections.contacts.findOne(owned(organizationId, id), { projection: CONTACT_PROJECTION })
      if (document === null) return Option.none()
      return Option.some((await contactRecords(collections, organizationId, [document as ContactDocument]))[0]!)
    }),
  findByPhone: (organizationId, phone) =>
    attempt("contacts.findByPhone", async () => {
      const document = await collections.contacts.findOne(contactByPhone(organizationId, phone), { projection: CONTACT_PROJECTION })
      if (document === null) return Option.none()
      return Option.some((await contactRecords(collections, organizationId, [document as ContactDocument]))[0]!)
    }),
  update: (organizationId, id, patch, now) =>
    attempt("contacts.update", () =>
      onDuplicateKey(
        async (): Promise<ContactUpdateOutcome> => {
          const document = await collections.contacts.findOneAndUpdate(owned(organizationId, id), contactUpdatePipeline(patch, now), {
            returnDocument: "after",
            projection: CONTACT_PROJECTION
          })
          if (document === null) return { _tag: "NotFound" }
          return { _tag: "Updated", contact: (await contactRecords(collections, organizationId, [document as ContactDocument]))[0]! }
        },
        () => ({ _tag: "PhoneTaken" }) as const
      )
    ),
  markMarketingOptOut: (organizationId, id, at) =>
    attempt("contacts.markMarketingOptOut", async () => {
      // `$eq: null` also matches a document written before the field existed.
      const result = await collections.contacts.updateOne(
        { ...owned(organizationId, id), marketing_opt_out_at: eq(null) },
        { $set: { marketing_opt_out_at: at } }
      )
      return result.matchedCount > 0
    }),
  delete: (organizationId, id) =>
    attempt("contacts.delete", async () => {
      await usage.touch(organizationId)
      const document = await collections.contacts.findOneAndDelete(owned(organizationId, id), { projection: { chat: 1 } })
      if (document === null) return false
      if (document.chat !== undefined) {
        await collections.messages.deleteMany({ ...ofOrganization(organizationId), chat_uuid: eq(document.chat.uuid) })
      }
      await markContactMediaDeleted(collections, usage, organizationId, id)
      await usage.add(organizationId, "contacts", -1)
      return true
    }),
  labelsOf: (organizationId, id) =>
    attempt("contacts.labelsOf", async () => {
      const document = await collections.contacts.findOne(owned(organizationId, id), { projection: { label_ids: 1 } })
      if (document === null) return Option.none()
      const ids = document.label_ids ?? []
      const labels = ids.length === 0 ? [] : await collections.labels.find(ownedAmong(organizationId, ids)).toArray()
      return Option.some(byName(await labelRecords(collections, organizationId, labels)))
    })
})
