import {
  byId,
  ofOrganization,
  storedBytesPipeline,
  type UsageField,
  usageIncrement,
  usageReconcileFilter,
  usageReservation
} from "./queries.js"
import { isDuplicateKey } from "./driver.js"
import type { Collections } from "./schema.js"

/**
 * Plan-limit counters without multi-document transactions (docs/storage.md "Plan limits without transactions"): each organization
 * has one `usage` document holding how many contacts and labels it has. A write that adds
 * rows first reserves slots with one conditional `$inc` (`count + n <= limit`), which
 * MongoDB applies atomically to the one document, so concurrent requests on any number of
 * instances can never reserve past the limit; then it writes; then it releases (`$inc -n`)
 * whatever it did not write. A delete decrements after the rows are gone. The media limit
 * works the same way on `media_bytes`, in bytes: a write that stores a media reserves its
 * `size` first; one that moves a `stored` media away from `stored` stamps `touched_at`
 * ({@link Usage.touch}), writes, then decrements.
 *
 * Crash windows (the process dies between two steps): after a reservation and before its
 * write or release, or after a delete and before its decrement. Both leave the counter
 * *above* the real count (never below: nothing is written without a reservation first), so
 * the limit still holds; the organization only loses those slots until
 * {@link reconcileUsage} runs at the next start-up and lowers the counter to the real count.
 */
export interface Usage {
  /**
   * Reserves `amount` slots of `field` within `limit` (`null` = unlimited, still counted).
   * Answers `{ reserved: true }`, or `{ reserved: false, usage }` with the counter as it
   * stands (the limit would be passed).
   */
  readonly reserve: (
    organizationId: string,
    field: UsageField,
    amount: number,
    limit: number | null
  ) => Promise<{ readonly reserved: true } | { readonly reserved: false; readonly usage: number }>
  /** Adds `amount` (negative: releases or counts deletions) to `field`. */
  readonly add: (organizationId: string, field: UsageField, amount: number) => Promise<void>
  /**
   * Stamps the document's `touched_at` before a delete, so a reconciliation running while
   * the delete is in flight leaves the counter alone (see {@link reconcileUsage}).
   */
  readonly touch: (organizationId: string) => Promise<void>
  /** Creates the usage document of a new organization (zero counts). */
  readonly create: (organizationId: string) => Promise<void>
  /** Creates the usage document from the real counts when it is missing. */
  readonly ensure: (organizationId: string) => Promise<void>
  /**
   * Adds the `channels` counter, from the real count, to a usage document that lacks it
   * (documents from before channels existed). Only a document without the field is set,
   * and every channel write reserves through the field first, so the count cannot be stale.
   */
  readonly ensureChannels: (organizationId: string) => Promise<void>
  /**
   * Adds the `media_bytes` counter, from the real sum of the organization's `stored` media,
   * to a usage document that lacks it (organizations from before media existed); one read
   * when it has it. Every write that stores bytes reserves through the field first (after
   * this), so the sum cannot be stale; only a document without the field is set.
   */
  readonly ensureMediaBytes: (organizationId: string) => Promise<void>
}

/** The organization's stored bytes as they are: the sum of the `size` of its `stored` media. */
export const storedBytes = async (collections: Collections, organizationId: string): Promise<number> => {
  const [row] = await collections.media.aggregate<{ bytes: number }>(storedBytesPipeline(organizationId)).toArray()
  return row?.bytes ?? 0
}

/** The {@link Usage} of the storage's `usage` collection. */
export const makeUsage = (collections: Collections): Usage => {
  /** Creates the document from the real counts when missing (an organization from before it existed). */
  const ensure = async (organizationId: string) => {
    if ((await collections.usage.countDocuments(byId(organizationId), { limit: 1 })) > 0) return
    const [contacts, labels] = await Promise.all([
      collections.contacts.countDocuments(ofOrganization(organizationId)),
      collections.labels.countDocuments(ofOrganization(organizationId))
    ])
    try {
      await collections.usage.insertOne({ _id: organizationId, contacts, labels, touched_at: new Date(0) })
    } catch (error) {
      if (!isDuplicateKey(error)) throw error // another request created it first
    }
  }

  const add = async (organizationId: string, field: UsageField, amount: number) => {
    const result = await collections.usage.updateOne(byId(organizationId), usageIncrement(field, amount))
    if (result.matchedCount === 0) {
      // A document created now counts the rows as they are: that already includes a
      // deletion or failed write being counted (negative amounts), but not a write about to
      // happen (positive amounts, counted before writing).
      await ensure(organizationId)
      if (amount > 0) await collections.usage.updateOne(byId(organizationId), usageIncrement(field, amount))
    }
  }

  const reserve: Usage["reserve"] = async (organizationId, field, amount, limit) => {
    for (let attempt = 0; attempt < 2; attempt++) {
      const result = await collections.usage.updateOne(
        usageReservation(organizationId, field, amount, limit),
        usageIncrement(field, amount)
      )
      if (result.matchedCount > 0) return { reserved: true }
      const current = await collections.usage.findOne(byId(organizationId))
      if (current !== null) return { reserved: false, usage: current[field] ?? 0 }
      await ensure(organizationId)
    }
    throw new Error(`usage document of organization ${organizationId} is missing`)
  }

  const ensureChannels = async (organizationId: string) => {
    await ensure(organizationId)
    const channels = await collections.channels.countDocuments(ofOrganization(organizationId))
    await collections.usage.updateOne({ ...byId(organizationId), channels: { $exists: false } }, { $set: { channels } })
  }

  const ensureMediaBytes = async (organizationId: string) => {
    const current = await collections.usage.findOne(byId(organizationId), { projection: { media_bytes: 1 } })
    if (typeof current?.media_bytes === "number") return
    await ensure(organizationId)
    const bytes = await storedBytes(collections, organizationId)
    await collections.usage.updateOne({ ...byId(organizationId), media_bytes: { $exists: false } }, { $set: { media_bytes: bytes } })
  }

  return {
    reserve,
    add,
    ensure,
    ensureChannels,
    ensureMediaBytes,
    touch: async (organizationId) => {
      await collections.usage.updateOne(byId(organizationId), { $currentDate: { touched_at: true } })
    },
    create: async (organizationId) => {
      try {
        await collections.usage.insertOne({ _id: organizationId, contacts: 0, labels: 0, media_bytes: 0, touched_at: new Date(0) })
      } catch (error) {
        if (!isDuplicateKey(error)) throw error
      }
    }
  }
}

/** Default quiet period of {@link reconcileUsage}: one minute, in milliseconds. */
export const DEFAULT_RECONCILE_QUIET_MS = 60_000

/**
 * The start-up reconciliation: for every organization, counts its contacts, labels and
 * channels and sums its stored media bytes, and lowers its counters to those values when
 * they are higher (what a crash leaves behind),
 * creating missing usage documents. It only changes a document no request has touched for
 * `quietMs` (server time), by a compare-and-set on the values read: a reservation or delete
 * in flight on another instance keeps its document unchanged until the next start-up, so
 * reconciling never drops a slot someone holds. Answers how many documents it changed.
 */
export const reconcileUsage = async (collections: Collections, quietMs: number = DEFAULT_RECONCILE_QUIET_MS): Promise<number> => {
  let changed = 0
  const usage = makeUsage(collections)
  for await (const organization of collections.organizations.find({}, { projection: { _id: 1 } })) {
    const organizationId = organization._id
    const seen = await collections.usage.findOne(byId(organizationId))
    if (seen === null) {
      await usage.ensure(organizationId)
      changed++
      continue
    }
    const [contacts, labels, channels, mediaBytes] = await Promise.all([
      collections.contacts.countDocuments(ofOrganization(organizationId)),
      collections.labels.countDocuments(ofOrganization(organizationId)),
      collections.channels.countDocuments(ofOrganization(organizationId)),
      seen.media_bytes === undefined ? 0 : storedBytes(collections, organizationId)
    ])
    const next = {
      contacts: Math.min(seen.contacts, contacts),
      labels: Math.min(seen.labels, labels),
      ...(seen.channels === undefined ? {} : { channels: Math.min(seen.channels, channels) }),
      ...(seen.media_bytes === undefined ? {} : { media_bytes: Math.min(seen.media_bytes, mediaBytes) })
    }
    if (
      next.contacts === seen.contacts &&
      next.labels === seen.labels &&
      next.channels === seen.channels &&
      next.media_bytes === seen.media_bytes
    ) continue
    const result = await collections.usage.updateOne(usageReconcileFilter(organizationId, seen, quietMs), { $set: next })
    changed += result.modifiedCount
  }
  return changed
}
