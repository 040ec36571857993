import type { Effect } from "effect"
import type { OrganizationId } from "../model/organizations.js"
import type { WebhookReject } from "../model/whatsapp.js"
import type { StorageError } from "./errors.js"

/**
 * Which {@link WebhookReject}s {@link WebhookRejectRepository.list} answers: those of one
 * organization (`organizationId`), or of every organization and none (absent); at most
 * `limit`, newest first.
 *
 * @category storage
 */
export interface WebhookRejectQuery {
  readonly organizationId?: OrganizationId
  readonly limit: number
}

/**
 * Parts of provider webhooks that were refused, kept for inspection
 * (docs/whatsapp-webhooks.md "Refused parts"). Like the organizations repository it reads
 * across organizations: a refused part may belong to none, and the admin CLI lists them
 * all. Every method fails only with {@link StorageError}.
 *
 * @category storage
 */
export interface WebhookRejectRepository {
  /**
   * Stores the rejects (`item` as JSON), all or nothing; a reject whose `id` is already
   * stored is skipped, the stored one kept (a redelivered webhook changes nothing).
   */
  readonly insert: (rejects: ReadonlyArray<WebhookReject>) => Effect.Effect<void, StorageError>
  /** The rejects matching `query`, newest first (`received_at desc, id desc`). */
  readonly list: (query: WebhookRejectQuery) => Effect.Effect<ReadonlyArray<WebhookReject>, StorageError>
  /** Deletes every reject received before `before` (ISO 8601 UTC); returns how many. */
  readonly prune: (before: string) => Effect.Effect<number, StorageError>
}
