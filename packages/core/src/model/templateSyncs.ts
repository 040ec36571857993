import { Schema } from "effect"
import type { OrganizationId } from "./organizations.js"

/**
 * How often the templates of each WhatsApp Business Account are read again from Meta, in
 * ms: 6 hours (docs/templates-and-replies.md "Templates from Meta"). A new account's
 * first sync is due at once; the records of accounts that existed before the sync records
 * did are spread over one interval.
 *
 * @category models
 */
export const TEMPLATE_SYNC_INTERVAL_MS = 21_600_000

/**
 * What one sync of an account's templates did: templates `added`, `updated` (status,
 * category or components changed), marked `deleted` (gone at Meta), and `unchanged`.
 *
 * @category models
 */
export const TemplateSyncOutcome = Schema.Struct({
  added: Schema.Int,
  updated: Schema.Int,
  deleted: Schema.Int,
  unchanged: Schema.Int
})
/** @category models */
export type TemplateSyncOutcome = typeof TemplateSyncOutcome.Type

/**
 * The last template sync of a channel's WhatsApp Business Account, as `GET
 * /channels/{uuid}` shows it (docs/channels.md "Template sync"): when it ran
 * (`last_run_at`, ISO 8601), its `outcome` (counts, `null` when it failed) and its `error`
 * (what failed, never a secret; `null` when it succeeded). All three `null` before the
 * first run.
 *
 * @category models
 */
export const ChannelTemplateSync = Schema.Struct({
  last_run_at: Schema.NullOr(Schema.String),
  outcome: Schema.NullOr(TemplateSyncOutcome),
  error: Schema.NullOr(Schema.String)
})
/** @category models */
export type ChannelTemplateSync = typeof ChannelTemplateSync.Type

/**
 * The sync record of one WhatsApp Business Account of an organization, as the store keeps
 * it (one per organization and `waba_id`): when the next sync is due (`next_due_at`), the
 * lease of the loop running it (`lease`, `lease_until`: both `null` while none holds it),
 * and the last run's time, outcome and error. Instants are ISO 8601 UTC strings.
 *
 * @category models
 */
export interface TemplateSync {
  readonly organization_id: OrganizationId
  readonly waba_id: string
  readonly next_due_at: string
  readonly lease: string | null
  readonly lease_until: string | null
  readonly last_run_at: string | null
  readonly last_outcome: TemplateSyncOutcome | null
  readonly last_error: string | null
}

/**
 * What `GET /channels/{uuid}` shows of a sync record: its last run, or every field `null`
 * when there is no record or it never ran.
 *
 * @category models
 */
export const channelTemplateSyncOf = (sync: TemplateSync | undefined): ChannelTemplateSync => ({
  last_run_at: sync?.last_run_at ?? null,
  outcome: sync?.last_outcome ?? null,
  error: sync?.last_error ?? null
})
