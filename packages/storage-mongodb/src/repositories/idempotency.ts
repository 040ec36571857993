import type { IdempotencyClaimOutcome, IdempotencyClaimRequest, IdempotencyRepository, OrganizationId } from "@switchboard/core"
import type { IdempotencyKeyDocument } from "../internal/documents.js"
import { attempt, isDuplicateKey } from "../internal/driver.js"
import type { Collections } from "../internal/schema.js"

/**
 * `Storage.idempotency` on MongoDB: collection `idempotency_keys`, one document per
 * organization and key (`_id` = `<organization id>:<key>`, organization ids being uuids).
 * Without multi-document transactions a claim is still atomic: the `insertOne` on the
 * `_id` is the insert-if-absent, and taking over an expired record or a stale lock is a
 * conditional `findOneAndUpdate` on the values just read (compare-and-set), retried when
 * another writer got there first. The document keeps `resource_uuid`, the uuid of what the
 * request creates; a takeover answers the one it read under that compare-and-set (a
 * document without one gets the takeover's own). A TTL index on `expire_at` lets the server delete
 * expired records too; `prune` deletes them at once.
 *
 * @category repositories
 */
export const idempotencyRepository = (collections: Collections): IdempotencyRepository => ({
  claim: (organizationId, request) => attempt("idempotency.claim", () => claimKey(collections, organizationId, request)),
  complete: (organizationId, key, { status, body }) =>
    attempt("idempotency.complete", async () => {
      await collections.idempotencyKeys.updateOne(
        { _id: idOf(organizationId, key), response_status: null },
        { $set: { response_status: status, response_body: body } }
      )
    }),
  release: (organizationId, key) =>
    attempt("idempotency.release", async () => {
      await collections.idempotencyKeys.deleteOne({ _id: idOf(organizationId, key), response_status: null })
    }),
  prune: (now) =>
    attempt("idempotency.prune", async () => (await collections.idempotencyKeys.deleteMany({ expires_at: { $lte: now } })).deletedCount)
})

/** At most this many compare-and-set rounds lost to other writers before answering `InProgress`. */
const ROUNDS = 5

const claimKey = async (
  collections: Collections,
  organizationId: OrganizationId,
  { key, fingerprint, resourceUuid, now, lockedUntil, expiresAt }: IdempotencyClaimRequest
): Promise<IdempotencyClaimOutcome> => {
  const keys = collections.idempotencyKeys
  const _id = idOf(organizationId, key)
  const fresh: IdempotencyKeyDocument = {
    _id,
    organization_id: organizationId,
    fingerprint,
    resource_uuid: resourceUuid,
    locked_until: lockedUntil,
    expires_at: expiresAt,
    expire_at: new Date(expiresAt),
    response_status: null,
    response_body: null,
    created_at: now
  }
  for (let round = 0; round < ROUNDS; round++) {
    try {
      await keys.insertOne(fresh)
      return { _tag: "Claimed", resourceUuid, takeover: false }
    } catch (error) {
      if (!isDuplicateKey(error)) throw error
    }
    const found = await keys.findOne({ _id })
    if (found === null) continue // released meanwhile: insert again
    if (found.expires_at <= now) {
      const { _id: __, ...replacement } = fresh
      const taken = await keys.findOneAndUpdate({ _id, expires_at: found.expires_at, created_at: found.created_at }, { $set: replacement })
      if (taken !== null) return { _tag: "Claimed", resourceUuid, takeover: false }
      continue
    }
    if (found.fingerprint !== fingerprint) return { _tag: "FingerprintMismatch" }
    if (found.response_status !== null && found.response_body !== null) {
      return { _tag: "Completed", status: found.response_status, body: found.response_body }
    }
    if (found.locked_until > now) return { _tag: "InProgress" }
    // A takeover: the first claimant's uuid stays, so its message is answered, not sent again.
    const held = found.resource_uuid ?? resourceUuid
    const taken = await keys.findOneAndUpdate(
      { _id, locked_until: found.locked_until, resource_uuid: found.resource_uuid ?? null, response_status: null },
      { $set: { locked_until: lockedUntil, resource_uuid: held } }
    )
    if (taken !== null) return { _tag: "Claimed", resourceUuid: held, takeover: true }
  }
  return { _tag: "InProgress" }
}

const idOf = (organizationId: OrganizationId, key: string) => `${organizationId}:${key}`
