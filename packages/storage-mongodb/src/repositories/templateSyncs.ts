import { Option } from "effect"
import type { OrganizationId, TemplateSync, TemplateSyncRepository } from "@switchboard/core"
import { TEMPLATE_SYNC_INTERVAL_MS } from "@switchboard/core"
import type { TemplateSyncDocument } from "../internal/documents.js"
import { attempt, onDuplicateKey } from "../internal/driver.js"
import { eq } from "../internal/queries.js"
import type { Collections } from "../internal/schema.js"

/** The `_id` of an organization's account's sync record. */
const syncId = (organizationId: string, wabaId: string): string => `${organizationId}/${wabaId}`

/** The records due at `now`: `next_due_at` reached, with no lease or one ended. */
const dueFilter = (now: string) => ({
  next_due_at: { $lte: now },
  $or: [{ lease_until: null }, { lease_until: { $lte: now } }]
})

/** Claim order: earliest due first (`template_syncs_due`). */
const DUE_ORDER = { next_due_at: 1, _id: 1 } as const

/**
 * `Storage.templateSyncs` on MongoDB: collection `template_syncs`, one document per
 * organization and account ({@link TemplateSyncDocument}). `ensureDue` is one upsert
 * (`$setOnInsert` the record, `$min` its `next_due_at`; of two first upserts at once the
 * second, refused on `_id`, runs again as an update); `claim` leases one record per
 * `findOneAndUpdate` (due, earliest first), so of two processes each record goes to one;
 * `renew` and `record` are one update each, conditional on the lease. A channel insert
 * writes its account's record right after the channel ({@link ensureTemplateSyncDue}: a
 * crash between is repaired at the next start by {@link upgradeTemplates}).
 *
 * @category repositories
 */
export const templateSyncRepository = (collections: Collections): TemplateSyncRepository => ({
  ensureDue: (organizationId, wabaId, dueAt) =>
    attempt("templateSyncs.ensureDue", () => ensureTemplateSyncDue(collections, organizationId, wabaId, dueAt)),
  claim: ({ now, lease, leaseUntil, limit }) =>
    attempt("templateSyncs.claim", async () => {
      const claimed: Array<TemplateSync> = []
      while (claimed.length < limit) {
        const document = await collections.templateSyncs.findOneAndUpdate(
          dueFilter(now),
          { $set: { lease, lease_until: leaseUntil } },
          { sort: DUE_ORDER, returnDocument: "after" }
        )
        if (document === null) break
        claimed.push(syncOf(document))
      }
      return claimed
    }),
  claimAccount: (organizationId, wabaId, { lease, leaseUntil, now }) =>
    attempt("templateSyncs.claimAccount", async () => {
      const result = await collections.templateSyncs.updateOne(
        { _id: eq(syncId(organizationId, wabaId)), $or: [{ lease_until: null }, { lease_until: { $lte: now } }] },
        { $set: { lease, lease_until: leaseUntil } }
      )
      return result.matchedCount > 0
    }),
  renew: (organizationId, wabaId, lease, leaseUntil) =>
    attempt("templateSyncs.renew", async () => {
      const result = await collections.templateSyncs.updateOne(
        { _id: eq(syncId(organizationId, wabaId)), lease: eq(lease) },
        { $set: { lease_until: leaseUntil } }
      )
      return result.matchedCount > 0
    }),
  record: (organizationId, wabaId, lease, result) =>
    attempt("templateSyncs.record", async () => {
      const written = await collections.templateSyncs.updateOne(
        { _id: eq(syncId(organizationId, wabaId)), lease: eq(lease) },
        {
          $set: {
            next_due_at: result.next_due_at,
            last_run_at: result.last_run_at,
            last_outcome: result.last_outcome === null ? null : { ...result.last_outcome },
            last_error: result.last_error,
            lease: null,
            lease_until: null
          }
        }
      )
      return written.matchedCount > 0
    }),
  get: (organizationId, wabaId) =>
    attempt("templateSyncs.get", async () =>
      Option.map(Option.fromNullable(await collections.templateSyncs.findOne({ _id: eq(syncId(organizationId, wabaId)) })), syncOf)
    ),
  nextDueAt: () =>
    attempt("templateSyncs.nextDueAt", async () => {
      // A record is due at next_due_at, a leased one not before its lease ends: read in
      // next_due_at order until no later record can be earlier.
      let earliest: string | undefined
      for await (const sync of collections.templateSyncs.find({}, { sort: DUE_ORDER, projection: { next_due_at: 1, lease_until: 1 } })) {
        const due = sync.next_due_at
        if (earliest !== undefined && due >= earliest) break
        const at = sync.lease_until !== null && sync.lease_until !== undefined && sync.lease_until > due ? sync.lease_until : due
        if (earliest === undefined || at < earliest) earliest = at
      }
      return Option.fromNullable(earliest)
    })
})

/**
 * The record of an organization's account due at `dueAt` (`TemplateSyncRepository.ensureDue`):
 * created when missing, brought forward when due later; one upsert.
 */
export const ensureTemplateSyncDue = async (
  collections: Collections,
  organizationId: string,
  wabaId: string,
  dueAt: string
): Promise<void> => {
  const upsert = () =>
    collections.templateSyncs.updateOne(
      { _id: eq(syncId(organizationId, wabaId)) },
      {
        $setOnInsert: {
          organization_id: organizationId,
          waba_id: wabaId,
          lease: null,
          lease_until: null,
          last_run_at: null,
          last_outcome: null,
          last_error: null
        },
        $min: { next_due_at: dueAt }
      },
      { upsert: true }
    )
  // Two first upserts at once: one inserts, the other is refused on `_id` and updates.
  await onDuplicateKey(upsert, upsert)
}

/**
 * Brings the templates of an earlier version up to date, at start-up (idempotent):
 * statuses `FLAGGED` and `REINSTATED` (webhook events, stored as statuses before) become
 * `APPROVED`, as Meta's list answers them; and every (organization, `waba_id`) of the
 * channels without a sync record gets one, due at `nowMs` plus a uniform random part of
 * the 6-hour interval (`Math.random`), so the first syncs of an upgraded install do not
 * all run at once. It also repairs a channel insert whose record was not written (a crash
 * between the two writes).
 */
export const upgradeTemplates = async (collections: Collections, nowMs: number): Promise<void> => {
  await collections.templates.updateMany({ status: { $in: ["FLAGGED", "REINSTATED"] } }, { $set: { status: "APPROVED" } })
  const accounts = await collections.channels
    .aggregate<{ _id: { organization_id: string; waba_id: string } }>([
      { $group: { _id: { organization_id: "$organization_id", waba_id: "$waba_id" } } }
    ])
    .toArray()
  for (const { _id: account } of accounts) {
    const id = syncId(account.organization_id, account.waba_id)
    if ((await collections.templateSyncs.countDocuments({ _id: eq(id) }, { limit: 1 })) > 0) continue
    const dueAt = new Date(nowMs + Math.floor(Math.random() * TEMPLATE_SYNC_INTERVAL_MS)).toISOString()
    await ensureTemplateSyncDue(collections, account.organization_id, account.waba_id, dueAt)
  }
}

/** The core record of a document. */
const syncOf = (document: TemplateSyncDocument): TemplateSync => ({
  organization_id: document.organization_id as OrganizationId,
  waba_id: document.waba_id,
  next_due_at: document.next_due_at,
  lease: document.lease ?? null,
  lease_until: document.lease_until ?? null,
  last_run_at: document.last_run_at ?? null,
  last_outcome: document.last_outcome === null || document.last_outcome === undefined ? null : { ...document.last_outcome },
  last_error: document.last_error ?? null
})
