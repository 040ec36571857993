import { Context, Effect, Layer, Option } from "effect"
import { Channels } from "../channels/Channels.js"
import { Settings } from "../common/Settings.js"
import { nowIso } from "../internal/time.js"
import { IssueCollector, isRecord } from "../internal/validation.js"
import type { SecretKeyMismatch, SecretKeyMissing } from "../model/channelErrors.js"
import { type ChannelId, type ChannelWithToken } from "../model/channels.js"
import { InvalidInput, RecordNotFound } from "../model/commonErrors.js"
import { MetaTemplateCallFailed } from "../model/metaTemplateErrors.js"
import type { OrganizationId } from "../model/organizations.js"
import { NoChannelForAccount, TemplateNameTaken } from "../model/templateErrors.js"
import { type Template, TemplateCategory, type TemplateContent, type TemplateId, TemplateStatus } from "../model/templates.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { StorageError } from "../storage/errors.js"
import { Storage } from "../storage/Storage.js"
import { type MetaTemplateAccount, MetaTemplateApi, type MetaTemplateApiService, type MetaTemplatePage, metaTemplateAccount } from "./MetaTemplateApi.js"
import { readProviderTemplate } from "./readProviderTemplate.js"
import { readSubmission } from "./readSubmission.js"
import { changeTemplateStatus } from "./Templates.js"

/**
 * Meta's `error_subcode` for a submission whose name and language the account already
 * holds ("Content in this language already exists").
 *
 * @category templates
 */
export const META_TEMPLATE_EXISTS_SUBCODE = "2388024"

/** Pages of Meta's list read when adopting a template that already exists there. */
const MAX_LOOKUP_PAGES = 20

/**
 * What `POST /templates` takes: the channel whose WhatsApp Business Account and token
 * submit the template, and the template in Meta's management shape
 * (docs/templates-and-replies.md "Submitting and deleting").
 *
 * @category models
 */
export interface TemplateSubmissionInput {
  readonly channel_uuid: string
  readonly name: string
  readonly language: string
  readonly category: string
  readonly components: ReadonlyArray<unknown>
}

/**
 * Options of {@link TemplateSubmissionsService.submit}: `templateUuid`, the uuid the
 * template gets (an Idempotency-Key's claim chose it); when the organization already has a
 * template with it that Meta gave an id, that template is answered as it now stands, and so
 * is one the key's other request wrote under it while this one ran (met by its name or by
 * the write), never `TemplateNameTaken` (docs/messaging.md "Idempotency-Key").
 *
 * @category models
 */
export interface TemplateSubmitOptions {
  readonly templateUuid?: TemplateId
}

/**
 * Submitting templates to Meta and deleting them there (docs/templates-and-replies.md
 * "Submitting and deleting"), through the organization's channels' access tokens and
 * {@link MetaTemplateApi}.
 *
 * @category services
 */
export interface TemplateSubmissionsService {
  /**
   * Submits a template to the WhatsApp Business Account of the channel `channel_uuid`:
   * - a `channel_uuid` the organization does not have → `RecordNotFound` (field
   *   `channel_uuid`), before any rule of the template is checked;
   * - the rules of `readSubmission` (the template rules, MARKETING or UTILITY, no media
   *   header, one example per placeholder) → `InvalidInput` naming each field;
   * - the identity (account, name, language) held by another template → `TemplateNameTaken`,
   *   unless that one is `DELETED`: it is then revived (its content replaced once Meta took
   *   the submission);
   * - the template is written `PENDING` with no Meta id, then submitted with the channel's
   *   token; Meta's answer gives its `provider_template_id`, `category` and status (a change
   *   of status through `changeTemplateStatus`). Meta's "already exists" (subcode
   *   {@link META_TEMPLATE_EXISTS_SUBCODE}) adopts Meta's template of that name and language
   *   (its id, status, category and components); any other failure removes the local row and
   *   fails with `MetaTemplateCallFailed` (Meta's reason, never the token).
   */
  readonly submit: (
    organizationId: OrganizationId,
    input: unknown,
    options?: TemplateSubmitOptions
  ) => Effect.Effect<
    Template,
    InvalidInput | RecordNotFound | TemplateNameTaken | MetaTemplateCallFailed | SecretKeyMissing | SecretKeyMismatch | StorageError
  >
  /**
   * Deletes a template: one with a Meta id (`provider_template_id`) is deleted at Meta first
   * (`name` and `hsm_id`: that language only) through an `active` channel of the
   * organization on its `waba_id` (none → `NoChannelForAccount`; Meta's failure →
   * `MetaTemplateCallFailed`; either way nothing changed); one without (written by hand,
   * imported) only here. Then it is marked `DELETED` through `changeTemplateStatus` (its
   * `sending` broadcasts stop). An already `DELETED` template is answered as it is, Meta
   * not called. Unknown → `RecordNotFound`.
   */
  readonly remove: (
    organizationId: OrganizationId,
    id: TemplateId
  ) => Effect.Effect<
    Template,
    RecordNotFound | NoChannelForAccount | MetaTemplateCallFailed | SecretKeyMissing | SecretKeyMismatch | StorageError
  >
}

/**
 * Tag of the {@link TemplateSubmissionsService}; `TemplateSubmissions.layer` needs
 * `Storage`, `Channels` and `SecureRandom`, and reads {@link MetaTemplateApi} (the Graph
 * API by default) when called.
 *
 * @category services
 */
export class TemplateSubmissions extends Context.Tag("@switchboard/core/TemplateSubmissions")<
  TemplateSubmissions,
  TemplateSubmissionsService
>() {
  static readonly layer: Layer.Layer<TemplateSubmissions, never, Storage | Channels | SecureRandom> = Layer.effect(
    TemplateSubmissions,
    Effect.suspend(() => make)
  )
}

const accountOf = (channel: ChannelWithToken): MetaTemplateAccount => ({
  waba_id: channel.channel.waba_id,
  access_token: channel.access_token
})

const statusOf = (status: string): TemplateStatus => {
  const upper = status.trim().toUpperCase()
  return (TemplateStatus.literals as ReadonlyArray<string>).includes(upper) ? (upper as TemplateStatus) : "PENDING"
}

const categoryOf = (category: string, fallback: TemplateCategory): TemplateCategory => {
  const upper = category.trim().toUpperCase()
  return (TemplateCategory.literals as ReadonlyArray<string>).includes(upper) ? (upper as TemplateCategory) : fallback
}

/** Meta's template of exactly this name and language, read page by page (Meta's name filter matches parts of names). */
const findAtMeta = (api: MetaTemplateApiService, account: MetaTemplateAccount, name: string, language: string) =>
  Effect.gen(function* () {
    let after: string | null = null
    for (let page = 0; page < MAX_LOOKUP_PAGES; page++) {
      const found: MetaTemplatePage = yield* api.list(account, { after, limit: 100, name })
      const match = found.templates.find((entry) => isRecord(entry) && entry.name === name && entry.language === language)
      if (match !== undefined) return Option.some(match)
      if (found.after === null) break
      after = found.after
    }
    return Option.none<unknown>()
  })

const make = Effect.gen(function* () {
  const storage = yield* Storage
  const channels = yield* Channels
  const random = yield* SecureRandom

  const notFound = (id: string) => new RecordNotFound({ missing: [{ resource: "template", uuid: id }] })

  /**
   * Writes Meta's answer (id, category, content when adopted) keeping the row's status as
   * it now stands, then Meta's status through `changeTemplateStatus` — unless the status
   * webhook moved the row since `current` was read (Meta's review can arrive before its
   * answer to the submission is stored: the webhook is the later word).
   */
  const store = (
    organizationId: OrganizationId,
    current: Template,
    content: TemplateContent,
    status: TemplateStatus,
    rejected_reason: string | null
  ) =>
    Effect.gen(function* () {
      const id = current.uuid
      const latest = Option.getOrElse(yield* storage.templates.findById(organizationId, id), () => current)
      const now = yield* nowIso
      const kept = { ...content, status: latest.status, rejected_reason: latest.rejected_reason }
      const written = yield* storage.templates.update(organizationId, id, kept, now)
      if (written._tag === "NotFound") return yield* notFound(id)
      if (written._tag === "NameTaken") return yield* new TemplateNameTaken({ name: content.name, language: content.language })
      const movedMeanwhile = latest.status !== current.status
      if (movedMeanwhile || (status === latest.status && rejected_reason === latest.rejected_reason)) return written.template
      const changed = yield* changeTemplateStatus(organizationId, id, { status, rejected_reason, now }).pipe(Effect.provideService(Storage, storage))
      return changed._tag === "Updated" ? changed.template : written.template
    })

  const submit: TemplateSubmissionsService["submit"] = Effect.fn("TemplateSubmissions.submit")(function* (organizationId, input, options) {
    const body = isRecord(input) ? input : {}
    const first = new IssueCollector()
    const channelUuid = first.optionalUuid("channel_uuid", body.channel_uuid)
    if (channelUuid === null && first.issues.length === 0) first.add("required", "channel_uuid", "channel_uuid is required")
    if (first.issues.length > 0) return yield* new InvalidInput({ issues: first.issues })
    const channel = yield* channels.getWithToken(organizationId, channelUuid as ChannelId).pipe(
      Effect.catchTag("RecordNotFound", () =>
        Effect.fail(new RecordNotFound({ missing: [{ resource: "channel", uuid: channelUuid!, field: "channel_uuid" }] }))
      )
    )
    const { defaultCountry } = yield* Settings
    const collector = new IssueCollector()
    const read = readSubmission(collector, body, defaultCountry)
    if (collector.issues.length > 0) return yield* new InvalidInput({ issues: collector.issues })
    const content: TemplateContent = { ...read, waba_id: channel.channel.waba_id }
    const account = accountOf(channel)
    const api = yield* MetaTemplateApi

    // A takeover of an Idempotency-Key: what the first attempt left.
    let local: Template | undefined
    if (options?.templateUuid !== undefined) {
      const earlier = yield* storage.templates.findById(organizationId, options.templateUuid)
      if (Option.isSome(earlier) && earlier.value.provider_template_id !== null) return earlier.value
      if (Option.isSome(earlier)) local = earlier.value
    }
    let revived: Template | undefined
    if (local === undefined) {
      const held = yield* storage.templates.findByIdentity(organizationId, content.name, content.language, content.waba_id)
      const holder = Option.getOrUndefined(held)
      if (holder !== undefined && holder.waba_id === content.waba_id) {
        // Written under this uuid by the Idempotency-Key's other request (a retry that took a
        // slow first one over, or the first one meeting the retry's write): the same template.
        if (holder.uuid === options?.templateUuid) return holder
        if (holder.status !== "DELETED") return yield* new TemplateNameTaken({ name: content.name, language: content.language })
        revived = holder
      } else {
        const uuid = options?.templateUuid ?? ((yield* random.uuid()) as TemplateId)
        const created = yield* storage.templates.create(organizationId, { uuid, content, now: yield* nowIso })
        if (created._tag !== "Written") {
          // The key's other request wrote this uuid between the look-ups and this write.
          const other = options?.templateUuid === undefined ? Option.none() : yield* storage.templates.findById(organizationId, uuid)
          if (Option.isSome(other)) return other.value
          return yield* new TemplateNameTaken({ name: content.name, language: content.language })
        }
        local = created.template
      }
    }
    const current = (local ?? revived)!
    const id = current.uuid
    // A failure of Meta's removes the row written for it (a revived row was not touched yet).
    const forget = local === undefined ? Effect.void : Effect.asVoid(storage.templates.deleteUnsubmitted(organizationId, id))

    const submitted = yield* api
      .submit(account, { name: content.name, language: content.language, category: content.category, components: content.components })
      .pipe(
        Effect.map((answer) => ({ _tag: "Submitted" as const, answer })),
        Effect.catchIf(
          (failure) => failure.provider_subcode === META_TEMPLATE_EXISTS_SUBCODE,
          (failure) =>
            Effect.flatMap(findAtMeta(api, account, content.name, content.language), (found) =>
              Option.isSome(found) ? Effect.succeed({ _tag: "Exists" as const, raw: found.value }) : Effect.fail(failure)
            )
        ),
        Effect.tapError(() => forget)
      )
    if (submitted._tag === "Submitted") {
      const { answer } = submitted
      const stored: TemplateContent = { ...content, provider_template_id: answer.id, category: categoryOf(answer.category, content.category) }
      return yield* store(organizationId, current, stored, statusOf(answer.status), null)
    }
    // Meta already has it: adopt Meta's template as the sync would read it.
    const { content: adopted } = readProviderTemplate(submitted.raw, content.waba_id!)
    const { rejected_reason, ...rest } = adopted
    return yield* store(organizationId, current, { ...rest, name: content.name, language: content.language }, adopted.status, rejected_reason)
  })

  const remove: TemplateSubmissionsService["remove"] = Effect.fn("TemplateSubmissions.remove")(function* (organizationId, id) {
    const found = yield* storage.templates.findById(organizationId, id)
    if (Option.isNone(found)) return yield* notFound(id)
    const template = found.value
    if (template.status === "DELETED") return template
    if (template.provider_template_id !== null && template.waba_id !== null) {
      const account = yield* metaTemplateAccount(channels, organizationId, template.waba_id).pipe(Effect.provideService(Storage, storage))
      const api = yield* MetaTemplateApi
      yield* api.remove(account, { name: template.name, hsm_id: template.provider_template_id })
    }
    const outcome = yield* changeTemplateStatus(organizationId, id, { status: "DELETED", rejected_reason: null, now: yield* nowIso }).pipe(
      Effect.provideService(Storage, storage)
    )
    if (outcome._tag === "NotFound") return yield* notFound(id)
    return outcome.template
  })

  return { submit, remove } satisfies TemplateSubmissionsService
})
