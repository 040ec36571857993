import { Context, Effect, Layer, Option, Schedule } from "effect"
import { Channels } from "../channels/Channels.js"
import type { LeasedQueue } from "../dispatch/LeasedQueue.js"
import { nowIso } from "../internal/time.js"
import type { ChannelId } from "../model/channels.js"
import type { RecordNotFound } from "../model/commonErrors.js"
import type { SecretKeyMismatch, SecretKeyMissing } from "../model/channelErrors.js"
import { type MetaTemplateCallFailed, metaTemplateCallRetryable } from "../model/metaTemplateErrors.js"
import { nameKey } from "../model/names.js"
import type { OrganizationId } from "../model/organizations.js"
import { TemplateSyncFailed, TemplateSyncInProgress } from "../model/templateSyncErrors.js"
import { NoChannelForAccount } from "../model/templateErrors.js"
import { TEMPLATE_SYNC_INTERVAL_MS, type TemplateSync, type TemplateSyncOutcome } from "../model/templateSyncs.js"
import type { Template, TemplateId } from "../model/templates.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { StorageError } from "../storage/errors.js"
import { Storage } from "../storage/Storage.js"
import { MetaTemplateApi, type MetaTemplatePage, metaTemplateAccount } from "./MetaTemplateApi.js"
import { type ProviderTemplateRead, readProviderTemplate } from "./readProviderTemplate.js"
import { changeTemplateStatus } from "./Templates.js"

/**
 * Templates asked of Meta per page of a sync.
 *
 * @category templates
 */
export const TEMPLATE_SYNC_PAGE_LIMIT = 100

/** The most pages one sync reads (100 000 templates): a cursor that never ends stops there. */
const MAX_PAGES = 1_000

/**
 * The waits before each new try of a list page that failed with a retryable error
 * (`metaTemplateCallRetryable`: Meta's codes 1, 2, 4, 80008, 130429, a 5xx, no answer),
 * in ms, within one sync run. Default `[1000, 4000]`: three tries in all. Provide another
 * (tests: `[1, 1]`) with `Effect.provideService(TemplateSyncRetryDelays, [...])`.
 *
 * @category templates
 */
export class TemplateSyncRetryDelays extends Context.Reference<TemplateSyncRetryDelays>()(
  "@switchboard/core/TemplateSyncRetryDelays",
  { defaultValue: (): ReadonlyArray<number> => [1_000, 4_000] }
) {}

/**
 * The time from one sync of an account to its next, in ms, for a sync asked for by hand
 * ({@link syncChannelTemplates} without `intervalMs`): default
 * {@link TEMPLATE_SYNC_INTERVAL_MS} (6 hours). The http-adapter provides its
 * `templateSync.intervalMs` option here.
 *
 * @category templates
 */
export class TemplateSyncInterval extends Context.Reference<TemplateSyncInterval>()(
  "@switchboard/core/TemplateSyncInterval",
  { defaultValue: (): number => TEMPLATE_SYNC_INTERVAL_MS }
) {}

/**
 * Everything a sync may fail with: Meta's list could not be read (`TemplateSyncFailed`),
 * no active channel of the organization is on the account (`NoChannelForAccount`), the
 * channels' token could not be opened (`SecretKeyMissing`, `SecretKeyMismatch`), or the
 * store failed (`StorageError`).
 *
 * @category templates
 */
export type TemplateSyncError =
  | TemplateSyncFailed
  | NoChannelForAccount
  | SecretKeyMissing
  | SecretKeyMismatch
  | StorageError

/**
 * Reads every template of the WhatsApp Business Account `wabaId` from Meta (pages of
 * {@link TEMPLATE_SYNC_PAGE_LIMIT}, with the token of any `active` channel of the
 * organization on that account) and brings the organization's templates of that account
 * in line (docs/templates-and-replies.md "Templates from Meta"):
 *
 * - each of Meta's templates is matched by Meta's id, then by (name, language) among the
 *   account's templates; a new one is created (`added`), one whose category, components,
 *   problems or Meta id changed is rewritten and one whose status or rejected reason
 *   changed moves through {@link changeTemplateStatus} (either: `updated`), else
 *   `unchanged`. A Meta template with a new id for a `DELETED` row revives that row;
 * - templates of the account that came from Meta (a `provider_template_id`) and are no
 *   longer in Meta's list are marked `DELETED` (`deleted`); one already `DELETED` counts
 *   `unchanged`; templates with no account (written by hand or imported) are never touched;
 * - compare-and-set: a row whose `updated_at` is later than the start of the list read
 *   (a webhook or a submission changed it meanwhile) is left as it is (`unchanged`),
 *   checked by the store in each write's atomic step (`TemplateWriteGuard`);
 * - a template Switchboard's rules refuse is stored with its `problems`; one with no name
 *   or language, or whose write the store refuses, is skipped and logged: one odd
 *   template never fails a sync.
 *
 * A list page failing with a retryable error is tried again after each of
 * {@link TemplateSyncRetryDelays}; any other failure ends the run, `TemplateSyncFailed`
 * (templates written by earlier steps stay). Fails with {@link TemplateSyncError}.
 *
 * @category templates
 */
export const syncAccountTemplates = (
  organizationId: OrganizationId,
  wabaId: string
): Effect.Effect<TemplateSyncOutcome, TemplateSyncError, Storage | Channels | SecureRandom> =>
  Effect.gen(function* () {
    const storage = yield* Storage
    const channels = yield* Channels
    const random = yield* SecureRandom
    const api = yield* MetaTemplateApi
    const delays = yield* TemplateSyncRetryDelays

    const account = yield* metaTemplateAccount(channels, organizationId, wabaId)

    const startedAt = yield* nowIso
    const retry = delays.length === 0
      ? Schedule.stop
      : Schedule.fromDelays(delays[0]!, ...delays.slice(1))
    const listed: Array<unknown> = []
    let after: string | null = null
    for (let pages = 0; pages < MAX_PAGES; pages++) {
      const page: MetaTemplatePage = yield* api.list(account, { after, limit: TEMPLATE_SYNC_PAGE_LIMIT }).pipe(
        Effect.retry({ schedule: retry, while: metaTemplateCallRetryable }),
        Effect.mapError((failure: MetaTemplateCallFailed) =>
          new TemplateSyncFailed({ waba_id: wabaId, reason: failure.reason, provider_code: failure.provider_code })
        )
      )
      listed.push(...page.templates)
      if (page.after === null || page.after === after) break
      after = page.after
    }

    const existing = (yield* accountTemplates(organizationId, wabaId))
    const byProviderId = new Map<string, Template>()
    const byIdentity = new Map<string, Template>()
    for (const template of existing) {
      if (template.provider_template_id !== null && !byProviderId.has(template.provider_template_id)) {
        byProviderId.set(template.provider_template_id, template)
      }
      byIdentity.set(identityKey(template.name, template.language), template)
    }

    const outcome = { added: 0, updated: 0, deleted: 0, unchanged: 0 }
    const seen = new Set<TemplateId>()
    for (const raw of listed) {
      const read = readProviderTemplate(raw, wabaId)
      const { content } = read
      if (content.name === "" || content.language === "") {
        yield* Effect.logWarning("Template sync: a template from Meta without a name or language was skipped").pipe(
          Effect.annotateLogs({ waba_id: wabaId, problems: read.problems.map((problem) => `${problem.path}: ${problem.message}`).join("; ") })
        )
        continue
      }
      const match = (content.provider_template_id === null ? undefined : byProviderId.get(content.provider_template_id)) ??
        byIdentity.get(identityKey(content.name, content.language))
      if (match !== undefined && seen.has(match.uuid)) {
        // Meta listed one template twice (or two with one identity): the first counts.
        continue
      }
      if (match === undefined) {
        const uuid = (yield* random.uuid()) as TemplateId
        const written = yield* storage.templates.create(organizationId, { uuid, content, now: yield* nowIso })
        if (written._tag === "Written") {
          seen.add(written.template.uuid)
          outcome.added++
        } else {
          yield* skipped(wabaId, content.name, content.language, written._tag)
          outcome.unchanged++
        }
        continue
      }
      seen.add(match.uuid)
      outcome[yield* applyListed(organizationId, match, read, startedAt)]++
    }

    for (const template of existing) {
      if (seen.has(template.uuid) || template.provider_template_id === null) continue
      if (template.status === "DELETED") {
        outcome.unchanged++
        continue
      }
      const changed = yield* changeTemplateStatus(organizationId, template.uuid, {
        status: "DELETED",
        rejected_reason: null,
        now: yield* nowIso,
        unchangedSince: startedAt
      })
      if (changed._tag === "Stale") yield* leftAsItIs(template)
      outcome[changed._tag === "Updated" && changed.changed ? "deleted" : "unchanged"]++
    }
    return outcome
  }).pipe(Effect.withSpan("TemplateSync.syncAccountTemplates", { attributes: { "switchboard.waba_id": wabaId } }))

/** A template's identity within one account: its name key and exact language code. */
const identityKey = (name: string, language: string): string => `${nameKey(name)}\u0000${language}`

/** Every template of the organization on account `wabaId` (the store's pages, read through). */
const accountTemplates = (organizationId: OrganizationId, wabaId: string) =>
  Effect.gen(function* () {
    const storage = yield* Storage
    const found: Array<Template> = []
    const perPage = 100
    for (let page = 1; ; page++) {
      const { items, total } = yield* storage.templates.list(organizationId, { page, per_page: perPage })
      for (const template of items) if (template.waba_id === wabaId) found.push(template)
      if (items.length < perPage || page * perPage >= total) break
    }
    return found
  })

/** Logs a template the compare-and-set left as it is: changed after the sync's list read began. */
const leftAsItIs = (template: Template) =>
  Effect.logInfo("Template sync: a template changed since the sync began was left as it is").pipe(
    Effect.annotateLogs({ template_id: template.uuid, name: template.name, language: template.language })
  )

/** Applies one listed template to its stored row: which count it goes to. */
const applyListed = (
  organizationId: OrganizationId,
  match: Template,
  read: ProviderTemplateRead,
  startedAt: string
): Effect.Effect<"updated" | "unchanged", StorageError, Storage> =>
  Effect.gen(function* () {
    const storage = yield* Storage
    const { content } = read
    const contentChanged = match.category !== content.category ||
      match.provider_template_id !== content.provider_template_id ||
      match.name !== content.name ||
      JSON.stringify(match.components) !== JSON.stringify(content.components) ||
      JSON.stringify(match.problems) !== JSON.stringify(content.problems)
    const statusChanged = match.status !== content.status ||
      (content.status === "REJECTED" && match.rejected_reason !== content.rejected_reason)
    if (!contentChanged && !statusChanged) return "unchanged"
    // Compare-and-set: each write only while the row is unchanged since the list read began
    // (checked by the store in the write's atomic step), the second since the first.
    let unchangedSince = startedAt
    if (contentChanged) {
      // The status moves only through changeTemplateStatus (its event, its broadcast stops).
      const now = yield* nowIso
      const written = yield* storage.templates.update(
        organizationId,
        match.uuid,
        { ...content, status: match.status, rejected_reason: match.rejected_reason },
        now,
        { unchangedSince }
      )
      if (written._tag === "Stale") {
        yield* leftAsItIs(match)
        return "unchanged"
      }
      if (written._tag !== "Written") {
        yield* skipped(match.waba_id ?? "", content.name, content.language, written._tag)
        return "unchanged"
      }
      unchangedSince = now
    }
    if (statusChanged) {
      const changed = yield* changeTemplateStatus(organizationId, match.uuid, {
        status: content.status,
        rejected_reason: content.status === "REJECTED" ? content.rejected_reason : null,
        now: yield* nowIso,
        unchangedSince
      })
      if (changed._tag === "Stale") {
        yield* leftAsItIs(match)
        if (!contentChanged) return "unchanged"
      }
    }
    return "updated"
  })

/** Logs a template the store refused to write (`NameTaken`, `NotFound`): the sync goes on. */
const skipped = (wabaId: string, name: string, language: string, refusal: string) =>
  Effect.logWarning("Template sync: the store refused a template from Meta; it was skipped").pipe(
    Effect.annotateLogs({ waba_id: wabaId, name, language, refusal })
  )

/**
 * How one run of the template sync loop ended: the `outcome` counts, or the `error` text
 * kept on the sync record (`outcome` then `null`); `ran_at`, when it ended (ISO 8601).
 *
 * @category templates
 */
export interface TemplateSyncRun {
  readonly ran_at: string
  readonly outcome: TemplateSyncOutcome | null
  readonly error: string | null
}

/**
 * Options of the template sync loop and of a sync asked for by hand: `intervalMs`, the
 * time from one run's end to the account's next (default {@link TEMPLATE_SYNC_INTERVAL_MS},
 * 6 hours), after a success and after a failure alike.
 *
 * @category templates
 */
export interface TemplateSyncLoopOptions {
  readonly intervalMs?: number
}

/** The error text a failed run keeps on its record (never a token: none of these carries one). */
const errorText = (error: Exclude<TemplateSyncError, StorageError>): string => error.message

/** A run's result as the record keeps it. */
const recordOf = (run: TemplateSyncRun, intervalMs: number) => ({
  next_due_at: new Date(Date.parse(run.ran_at) + intervalMs).toISOString(),
  last_run_at: run.ran_at,
  last_outcome: run.outcome,
  last_error: run.error
})

/** One sync of a leased record, its failure (but the store's) answered as the error kept. */
const runOnce = (organizationId: OrganizationId, wabaId: string) =>
  Effect.gen(function* () {
    const result = yield* syncAccountTemplates(organizationId, wabaId).pipe(
      Effect.map((outcome) => ({ outcome, failure: Option.none<Exclude<TemplateSyncError, StorageError>>() })),
      Effect.catchIf(
        (error): error is Exclude<TemplateSyncError, StorageError> => error._tag !== "StorageError",
        (error) => Effect.succeed({ outcome: null, failure: Option.some(error) })
      )
    )
    const run: TemplateSyncRun = {
      ran_at: yield* nowIso,
      outcome: result.outcome,
      error: Option.getOrNull(Option.map(result.failure, errorText))
    }
    return { run, failure: result.failure }
  })

/**
 * The template sync loop's queue (`runLeasedQueue`, docs/templates-and-replies.md
 * "Templates from Meta"): the due records of `Storage.templateSyncs`, each run with
 * {@link syncAccountTemplates} and recorded with its outcome or error, due again
 * `intervalMs` after it ran. A failure is kept on the record and never pauses a channel
 * nor touches its sends; a record whose account has no active channel left records
 * `NoChannelForAccount`'s text and is tried again an interval later. A store failure
 * leaves the record leased until its lease ends (then it is claimed again).
 *
 * @category templates
 */
export const templateSyncQueue = (
  options: TemplateSyncLoopOptions = {}
): LeasedQueue<TemplateSync, TemplateSyncRun, StorageError, Storage | Channels | SecureRandom> => {
  const intervalMs = options.intervalMs ?? TEMPLATE_SYNC_INTERVAL_MS
  return {
    name: "template sync",
    claim: (now, leaseUntil, limit) =>
      Effect.gen(function* () {
        const storage = yield* Storage
        const lease = yield* (yield* SecureRandom).uuid()
        return yield* storage.templateSyncs.claim({
          now: new Date(now).toISOString(),
          lease,
          leaseUntil: new Date(leaseUntil).toISOString(),
          limit
        })
      }),
    run: (job) =>
      Effect.map(runOnce(job.organization_id, job.waba_id), ({ run }) => run).pipe(
        Effect.tap((run) =>
          run.error === null
            ? Effect.void
            : Effect.logWarning("Template sync failed; kept on the account's sync record").pipe(
              Effect.annotateLogs({ waba_id: job.waba_id, error: run.error })
            )
        )
      ),
    record: (job, run) =>
      Effect.flatMap(Storage, (storage) =>
        storage.templateSyncs.record(job.organization_id, job.waba_id, job.lease ?? "", recordOf(run, intervalMs))
      ),
    dueAgainAt: (run) => Date.parse(run.ran_at) + intervalMs,
    renew: (job, leaseUntil) =>
      Effect.flatMap(Storage, (storage) =>
        storage.templateSyncs.renew(job.organization_id, job.waba_id, job.lease ?? "", new Date(leaseUntil).toISOString())
      ),
    nextDueAt: () =>
      Effect.flatMap(Storage, (storage) =>
        Effect.map(storage.templateSyncs.nextDueAt(), (at) => Option.getOrNull(Option.map(at, Date.parse)))
      ),
    span: {
      name: "template sync job",
      attributes: (job) => ({ "switchboard.waba_id": job.waba_id })
    }
  }
}

/**
 * How long a sync asked for by hand holds its account's record, in ms (2 minutes: a run
 * reads at most a few pages and waits at most its retry delays).
 *
 * @category templates
 */
export const MANUAL_TEMPLATE_SYNC_LEASE_MS = 120_000

/**
 * Syncs the templates of a channel's WhatsApp Business Account now
 * (`POST /channels/{uuid}/templates/sync`, CLI `templates sync`; docs/templates-and-replies.md
 * "Templates from Meta"): leases the account's sync record for this call (created when
 * missing), runs {@link syncAccountTemplates} and records its outcome or error on the
 * record (the next run of the loop due `intervalMs` later, default {@link TemplateSyncInterval}). Unknown channel →
 * `RecordNotFound`; another sync holds the record → `TemplateSyncInProgress` (nothing
 * run); the run's failure is recorded, then answered.
 *
 * @category templates
 */
export const syncChannelTemplates = (
  organizationId: OrganizationId,
  channelId: ChannelId,
  options: TemplateSyncLoopOptions = {}
): Effect.Effect<
  TemplateSyncOutcome,
  TemplateSyncError | TemplateSyncInProgress | RecordNotFound,
  Storage | Channels | SecureRandom
> =>
  Effect.gen(function* () {
    const intervalMs = options.intervalMs ?? (yield* TemplateSyncInterval)
    const storage = yield* Storage
    const channel = yield* (yield* Channels).get(organizationId, channelId)
    const wabaId = channel.waba_id
    const lease = yield* (yield* SecureRandom).uuid()
    const now = yield* nowIso
    const leaseUntil = new Date(Date.parse(now) + MANUAL_TEMPLATE_SYNC_LEASE_MS).toISOString()
    if (Option.isNone(yield* storage.templateSyncs.get(organizationId, wabaId))) {
      // An account older than the sync records: its record, due an interval from now.
      yield* storage.templateSyncs.ensureDue(organizationId, wabaId, new Date(Date.parse(now) + intervalMs).toISOString())
    }
    if (!(yield* storage.templateSyncs.claimAccount(organizationId, wabaId, { now, lease, leaseUntil }))) {
      return yield* new TemplateSyncInProgress({ waba_id: wabaId })
    }
    // A store failure ends the call; the record's lease then ends by itself, as after a crash.
    const { failure, run } = yield* runOnce(organizationId, wabaId)
    yield* storage.templateSyncs.record(organizationId, wabaId, lease, recordOf(run, intervalMs))
    if (Option.isSome(failure)) return yield* Effect.fail(failure.value)
    return run.outcome ?? { added: 0, updated: 0, deleted: 0, unchanged: 0 }
  }).pipe(Effect.withSpan("TemplateSync.syncChannelTemplates"))

/**
 * The template sync as a service (docs/templates-and-replies.md "Templates from Meta"):
 * `syncChannel`, {@link syncChannelTemplates} of the organization's channel `channelId`
 * (what `POST /channels/{uuid}/templates/sync` and the CLI's `templates sync` run). Meta's
 * API, the retry delays and the interval are read where it is called
 * ({@link MetaTemplateApi}, {@link TemplateSyncRetryDelays}, {@link TemplateSyncInterval}).
 *
 * @category services
 */
export interface TemplateSyncsService {
  readonly syncChannel: (
    organizationId: OrganizationId,
    channelId: ChannelId
  ) => Effect.Effect<TemplateSyncOutcome, TemplateSyncError | TemplateSyncInProgress | RecordNotFound>
}

/**
 * Tag of the {@link TemplateSyncsService}; `TemplateSyncs.layer` needs `Storage`,
 * `Channels` and `SecureRandom` (part of `Core.layer`).
 *
 * @category services
 * @example
 * import { Effect } from "effect"
 * import { type ChannelId, type OrganizationId, TemplateSyncs } from "@switchboard/core"
 *
 * const syncNow = (organizationId: OrganizationId, channelId: ChannelId) =>
 *   Effect.flatMap(TemplateSyncs, (syncs) => syncs.syncChannel(organizationId, channelId))
 * // → { added, updated, deleted, unchanged }
 */
export class TemplateSyncs extends Context.Tag("@switchboard/core/TemplateSyncs")<TemplateSyncs, TemplateSyncsService>() {
  static readonly layer: Layer.Layer<TemplateSyncs, never, Storage | Channels | SecureRandom> = Layer.effect(
    TemplateSyncs,
    Effect.gen(function* () {
      const context = yield* Effect.context<Storage | Channels | SecureRandom>()
      return {
        syncChannel: (organizationId, channelId) => Effect.provide(syncChannelTemplates(organizationId, channelId), context)
      }
    })
  )
}
