import type { OrganizationId, WebhookReject, WebhookRejectRepository } from "@switchboard/core"
import type { WebhookRejectDocument } from "../internal/documents.js"
import { attempt, isDuplicateKey } from "../internal/driver.js"
import { eq } from "../internal/queries.js"
import type { Collections } from "../internal/schema.js"

/**
 * `Storage.webhookRejects` on MongoDB: collection `webhook_rejects`, one document per
 * refused part (`_id` its uuid). `insert` is one unordered `insertMany` (an `_id` already
 * stored is a duplicate key, skipped); `list` reads newest first
 * through `webhook_rejects_newest` or `webhook_rejects_of_organization`; `prune` deletes by
 * `received_at`.
 *
 * @category repositories
 */
export const webhookRejectRepository = (collections: Collections): WebhookRejectRepository => ({
  insert: (rejects) =>
    attempt("webhookRejects.insert", async () => {
      if (rejects.length === 0) return
      try {
        await collections.webhookRejects.insertMany(rejects.map(documentOf), { ordered: false })
      } catch (error) {
        // An id already stored is the same part delivered again: the first is kept.
        if (!isDuplicateKey(error)) throw error
      }
    }),
  list: ({ organizationId, limit }) =>
    attempt("webhookRejects.list", async () => {
      const filter = organizationId === undefined ? {} : { organization_id: eq(organizationId) }
      const documents = await collections.webhookRejects.find(filter, { sort: { received_at: -1, _id: -1 }, limit }).toArray()
      return documents.map(recordOf)
    }),
  prune: (before) =>
    attempt("webhookRejects.prune", async () => (await collections.webhookRejects.deleteMany({ received_at: { $lt: before } })).deletedCount)
})

const documentOf = (reject: WebhookReject): WebhookRejectDocument => ({
  _id: reject.id,
  received_at: reject.received_at,
  organization_id: reject.organization_id,
  phone_number_id: reject.phone_number_id,
  reason: reject.reason,
  item_json: JSON.stringify(reject.item ?? null)
})

const recordOf = (document: WebhookRejectDocument): WebhookReject => ({
  id: document._id,
  received_at: document.received_at,
  organization_id: document.organization_id as OrganizationId | null,
  phone_number_id: document.phone_number_id,
  reason: document.reason,
  item: JSON.parse(document.item_json) as unknown
})
