import { Effect } from "effect"
import type { OrganizationId } from "../model/organizations.js"
import type { IdempotencyClaimOutcome, IdempotencyRepository } from "../storage/IdempotencyRepository.js"

/** An idempotency record as the memory store keeps it (`resource_uuid`: what its request creates). */
interface IdempotencyRow {
  readonly fingerprint: string
  readonly resource_uuid: string
  readonly locked_until: string
  readonly expires_at: string
  readonly response: { readonly status: number; readonly body: string } | null
}

/**
 * The idempotency repository of the memory store: one map keyed by organization and key.
 * Every method is synchronous, so a claim is atomic.
 */
export const idempotencyRepository = (): IdempotencyRepository => {
  const rows = new Map<string, IdempotencyRow>()
  const keyOf = (organizationId: OrganizationId, key: string) => `${organizationId}\u0000${key}`

  return {
    claim: (organizationId, { key, fingerprint, resourceUuid, now, lockedUntil, expiresAt }) =>
      Effect.sync((): IdempotencyClaimOutcome => {
        const id = keyOf(organizationId, key)
        const row = rows.get(id)
        if (row === undefined || row.expires_at <= now) {
          rows.set(id, { fingerprint, resource_uuid: resourceUuid, locked_until: lockedUntil, expires_at: expiresAt, response: null })
          return { _tag: "Claimed", resourceUuid, takeover: false }
        }
        if (row.fingerprint !== fingerprint) return { _tag: "FingerprintMismatch" }
        if (row.response !== null) return { _tag: "Completed", ...row.response }
        if (row.locked_until > now) return { _tag: "InProgress" }
        // A takeover: the first claimant's uuid stays, so its message is answered, not sent again.
        rows.set(id, { ...row, locked_until: lockedUntil })
        return { _tag: "Claimed", resourceUuid: row.resource_uuid, takeover: true }
      }),
    complete: (organizationId, key, { status, body }) =>
      Effect.sync(() => {
        const id = keyOf(organizationId, key)
        const row = rows.get(id)
        if (row !== undefined && row.response === null) rows.set(id, { ...row, response: { status, body } })
      }),
    release: (organizationId, key) =>
      Effect.sync(() => {
        const id = keyOf(organizationId, key)
        if (rows.get(id)?.response === null) rows.delete(id)
      }),
    prune: (now) =>
      Effect.sync(() => {
        let deleted = 0
        for (const [id, row] of rows) {
          if (row.expires_at <= now) {
            rows.delete(id)
            deleted++
          }
        }
        return deleted
      })
  }
}
