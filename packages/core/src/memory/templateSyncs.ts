import { Effect, Option } from "effect"
import type { OrganizationId } from "../model/organizations.js"
import type { TemplateSync } from "../model/templateSyncs.js"
import type { TemplateSyncRepository } from "../storage/TemplateSyncRepository.js"
import { type MemoryState, templateSyncKey } from "./state.js"

/**
 * The template sync records of the memory store, in its state (`ChannelRepository.insert`
 * writes one through {@link ensureTemplateSyncDue}). Every method is synchronous, so each
 * is atomic; records are returned as copies.
 */
export const templateSyncRepository = (state: MemoryState): TemplateSyncRepository => {
  const rows = state.templateSyncs
  return {
    ensureDue: (organizationId, wabaId, dueAt) => Effect.sync(() => ensureTemplateSyncDue(state, organizationId, wabaId, dueAt)),
    claim: ({ now, lease, leaseUntil, limit }) =>
      Effect.sync(() => {
        const due = [...rows.values()]
          .filter((row) => row.next_due_at <= now && (row.lease_until === null || row.lease_until <= now))
          .sort(dueOrder)
          .slice(0, Math.max(0, limit))
        return due.map((row) => {
          const leased: TemplateSync = { ...row, lease, lease_until: leaseUntil }
          rows.set(templateSyncKey(row.organization_id, row.waba_id), leased)
          return { ...leased }
        })
      }),
    claimAccount: (organizationId, wabaId, { lease, leaseUntil, now }) =>
      Effect.sync(() => {
        const key = templateSyncKey(organizationId, wabaId)
        const row = rows.get(key)
        if (row === undefined || (row.lease_until !== null && row.lease_until > now)) return false
        rows.set(key, { ...row, lease, lease_until: leaseUntil })
        return true
      }),
    renew: (organizationId, wabaId, lease, leaseUntil) =>
      Effect.sync(() => {
        const key = templateSyncKey(organizationId, wabaId)
        const row = rows.get(key)
        if (row === undefined || row.lease !== lease) return false
        rows.set(key, { ...row, lease_until: leaseUntil })
        return true
      }),
    record: (organizationId, wabaId, lease, result) =>
      Effect.sync(() => {
        const key = templateSyncKey(organizationId, wabaId)
        const row = rows.get(key)
        if (row === undefined || row.lease !== lease) return false
        rows.set(key, { ...row, ...result, last_outcome: result.last_outcome === null ? null : { ...result.last_outcome }, lease: null, lease_until: null })
        return true
      }),
    get: (organizationId, wabaId) =>
      Effect.sync(() => Option.map(Option.fromNullable(rows.get(templateSyncKey(organizationId, wabaId))), (row) => ({ ...row }))),
    nextDueAt: () =>
      Effect.sync(() => {
        let earliest: string | undefined
        for (const row of rows.values()) {
          const at = row.lease_until !== null && row.lease_until > row.next_due_at ? row.lease_until : row.next_due_at
          if (earliest === undefined || at < earliest) earliest = at
        }
        return Option.fromNullable(earliest)
      })
  }
}

/**
 * The record of an organization's account due at `dueAt`: created when missing, brought
 * forward when due later (`TemplateSyncRepository.ensureDue`).
 */
export const ensureTemplateSyncDue = (state: MemoryState, organizationId: OrganizationId, wabaId: string, dueAt: string): void => {
  const key = templateSyncKey(organizationId, wabaId)
  const row = state.templateSyncs.get(key)
  if (row === undefined) {
    state.templateSyncs.set(key, {
      organization_id: organizationId,
      waba_id: wabaId,
      next_due_at: dueAt,
      lease: null,
      lease_until: null,
      last_run_at: null,
      last_outcome: null,
      last_error: null
    })
  } else if (row.next_due_at > dueAt) {
    state.templateSyncs.set(key, { ...row, next_due_at: dueAt })
  }
}

/** Earliest due first, then by organization and account. */
const dueOrder = (a: TemplateSync, b: TemplateSync): number =>
  a.next_due_at !== b.next_due_at
    ? (a.next_due_at < b.next_due_at ? -1 : 1)
    : a.organization_id !== b.organization_id
      ? (a.organization_id < b.organization_id ? -1 : 1)
      : a.waba_id < b.waba_id ? -1 : a.waba_id > b.waba_id ? 1 : 0
