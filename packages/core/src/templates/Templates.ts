import { Context, Effect, Layer, Option } from "effect"
import { InvalidInput, RecordNotFound } from "../model/commonErrors.js"
import { nowIso } from "../internal/time.js"
import { IssueCollector } from "../internal/validation.js"
import type { OrganizationId } from "../model/organizations.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { Page, PageRequest } from "../model/common.js"
import { Settings } from "../common/Settings.js"
import type { StorageError } from "../storage/errors.js"
import { Storage } from "../storage/Storage.js"
import type { TemplateWriteOutcome } from "../storage/TemplateRepository.js"
import {
  TemplateManagedByMeta,
  TemplateNameTaken,
  TemplateNotApproved,
  TemplateNotFound,
  TemplateParametersMismatch,
  TemplateUnsupported
} from "../model/templateErrors.js"
import {
  isFromProvider,
  type ResolvedTemplate,
  type Template,
  type TemplateContent,
  type TemplateId,
  type TemplateInput,
  type TemplatePayload,
  type TemplateSendRequest,
  TemplateCategory,
  TemplateStatus
} from "../model/templates.js"
import { stopBroadcastsOfTemplate } from "./broadcastStops.js"
import { payloadOf } from "./payload.js"
import { MAX_REJECTED_REASON_LENGTH } from "./readProviderTemplate.js"
import { readTemplate } from "./readTemplate.js"
import { checkSendComponents } from "./sendCheck.js"
import type { TemplateStatusOutcome, TemplateStatusUpdate } from "../storage/TemplateRepository.js"

/**
 * Message templates of an organization (`/templates`, docs/templates-and-replies.md).
 * Templates written by hand come from here and the admin import; the API lists them, reads
 * one and builds the send payload. Submitting to Meta and deleting there is
 * `TemplateSubmissions`'s (`POST /templates`, `DELETE /templates/{uuid}`).
 *
 * @category services
 */
export interface TemplatesService {
  /**
   * Creates a template. Rules (each broken one is an issue of `InvalidInput`, named by
   * its JSON path): `name` 1–255 lowercase letters, digits and underscores; `language` a
   * code such as `en_US`; `category` MARKETING, UTILITY or AUTHENTICATION; `status`
   * APPROVED, PENDING or REJECTED; `components` with exactly one BODY (1–1024 characters)
   * and at most one HEADER (TEXT of 1–60 characters with at most `{{1}}`, or IMAGE, VIDEO,
   * DOCUMENT), FOOTER (1–60 characters, no placeholder) and BUTTONS (1–10 buttons:
   * QUICK_REPLY, URL (http(s), at most a trailing `{{1}}`) or PHONE_NUMBER (E.164), text
   * 1–25 characters). Placeholders are `{{1}}` … `{{n}}` without gaps. Another template
   * with the same name and language → `TemplateNameTaken`.
   */
  readonly create: (
    organizationId: OrganizationId,
    input: TemplateInput
  ) => Effect.Effect<Template, InvalidInput | TemplateNameTaken | StorageError>
  /**
   * Changes a template written by hand: fields given replace the stored ones (`components`
   * as a whole), then the whole template is checked as in `create`. A template from Meta
   * (it has a `waba_id` or a `provider_template_id`) → `TemplateManagedByMeta`, nothing
   * written: Meta owns it.
   */
  readonly update: (
    organizationId: OrganizationId,
    id: TemplateId,
    input: Partial<TemplateInput>
  ) => Effect.Effect<Template, InvalidInput | TemplateNameTaken | TemplateManagedByMeta | RecordNotFound | StorageError>
  /** One template. */
  readonly get: (organizationId: OrganizationId, id: TemplateId) => Effect.Effect<Template, RecordNotFound | StorageError>
  /** One page of templates, newest first. */
  readonly list: (organizationId: OrganizationId, page: PageRequest) => Effect.Effect<Page<Template>, StorageError>
  /**
   * The send payload of a template, whatever its status (docs/templates-and-replies.md):
   * `{template: {name, language: {code}, components}, slots}` with one empty parameter
   * per placeholder of the HEADER and BODY, per media header and per URL button with
   * `{{1}}`; each slot is `template.components[component].parameters[index]`. A template
   * with `problems` → `TemplateUnsupported` naming the first.
   */
  readonly payload: (
    organizationId: OrganizationId,
    id: TemplateId
  ) => Effect.Effect<TemplatePayload, TemplateUnsupported | RecordNotFound | StorageError>
  /**
   * Resolves the `template` object of a send through an account of `wabaId`
   * (docs/templates-and-replies.md "Sending a template: how the `template` object is
   * checked"): by name (case-insensitively) and exact language code, the template of that
   * WhatsApp Business Account, else one with no account (`wabaId` `null` or absent: only
   * one with no account) → else `TemplateNotFound`; no `problems` → else
   * `TemplateUnsupported` naming the first; status APPROVED → else `TemplateNotApproved`;
   * the parameters must fill every slot of the payload one for one, none empty → else
   * `TemplateParametersMismatch` listing every problem. Returns the template, the
   * normalised send object and the rendered text.
   */
  readonly resolveForSend: (
    organizationId: OrganizationId,
    request: TemplateSendRequest,
    wabaId?: string | null
  ) => Effect.Effect<
    ResolvedTemplate,
    TemplateNotFound | TemplateUnsupported | TemplateNotApproved | TemplateParametersMismatch | StorageError
  >
  /**
   * Applies a review status the provider reported for the WhatsApp Business Account
   * `waba_id` (docs/whatsapp-webhooks.md "Template statuses"). The template is the one
   * with Meta's id `provider_template_id` when given and found, else the one with this
   * name (case-insensitively) and language (`en-US` read as `en_US`) of that account,
   * else such a template with no account. Meta's `REINSTATED` is stored as `APPROVED`;
   * `FLAGGED` changes nothing (it is logged, and the template answered as it is). The
   * template gets `status` and, for `REJECTED`, `rejected_reason` = `reason` (`null`
   * otherwise), through {@link changeTemplateStatus} (a move away from `APPROVED` stops
   * the broadcasts sending it). `None` when the organization has no such template or
   * `status` is neither one of {@link TemplateStatus}'s nor a known event (nothing
   * written).
   */
  readonly applyProviderStatus: (
    organizationId: OrganizationId,
    report: {
      readonly waba_id?: string | null
      readonly provider_template_id?: string | null
      readonly name: string
      readonly language: string
      readonly status: string
      readonly reason: string | null
    }
  ) => Effect.Effect<Option.Option<Template>, StorageError>
  /**
   * Applies a category Meta gave a template of the WhatsApp Business Account `waba_id`
   * (docs/whatsapp-webhooks.md "Template statuses"), the template found as
   * `applyProviderStatus` finds it: it gets `category` (`updated_at` and the
   * `template.category_updated` event only when it changed). `None` when the organization
   * has no such template or `category` is not one of {@link TemplateCategory}'s (nothing
   * written).
   */
  readonly applyProviderCategory: (
    organizationId: OrganizationId,
    report: {
      readonly waba_id?: string | null
      readonly provider_template_id?: string | null
      readonly name: string
      readonly language: string
      readonly category: string
    }
  ) => Effect.Effect<Option.Option<Template>, StorageError>
}

/**
 * Tag of the {@link TemplatesService}; `Templates.layer` needs `Storage` and `SecureRandom`.
 *
 * @category services
 * @example
 * import { Effect } from "effect"
 * import { Templates, type OrganizationId } from "@switchboard/core"
 *
 * const create = (organizationId: OrganizationId) =>
 *   Effect.flatMap(Templates, (templates) =>
 *     templates.create(organizationId, {
 *       name: "order_update",
 *       language: "en_US",
 *       category: "UTILITY",
 *       status: "APPROVED",
 *       components: [{ type: "BODY", text: "Hi {{1}}, order {{2}} has shipped." }]
 *     })
 *   )
 */
export class Templates extends Context.Tag("@switchboard/core/Templates")<Templates, TemplatesService>() {
  static readonly layer: Layer.Layer<Templates, never, Storage | SecureRandom> = Layer.effect(
    Templates,
    Effect.suspend(() => make)
  )
}

const notFound = (id: string) => new RecordNotFound({ missing: [{ resource: "template", uuid: id }] })

/** Reads and checks a whole template, or fails with every issue. */
const checked = (input: unknown) =>
  Effect.flatMap(Settings, ({ defaultCountry }) => {
    const collector = new IssueCollector()
    const content = readTemplate(collector, "", input, defaultCountry)
    return collector.issues.length > 0 ? Effect.fail(new InvalidInput({ issues: collector.issues })) : Effect.succeed(content)
  })

const written = (
  outcome: TemplateWriteOutcome,
  id: string,
  content: TemplateContent
): Effect.Effect<Template, RecordNotFound | TemplateNameTaken> => {
  switch (outcome._tag) {
    case "Written":
      return Effect.succeed(outcome.template)
    case "NotFound":
      return Effect.fail(notFound(id))
    case "NameTaken":
      return Effect.fail(new TemplateNameTaken({ name: content.name, language: content.language }))
    case "Stale":
      // Only a guarded update answers Stale, and these writes are not guarded.
      return Effect.die(new Error("templates: an unguarded write answered Stale"))
  }
}

const make = Effect.gen(function* () {
  const storage = yield* Storage
  const random = yield* SecureRandom

  const get = (organizationId: OrganizationId, id: TemplateId) =>
    Effect.flatMap(storage.templates.findById(organizationId, id), (found) =>
      Option.match(found, { onNone: () => Effect.fail(notFound(id)), onSome: Effect.succeed })
    )

  const resolveForSend = Effect.fn("Templates.resolveForSend")(function* (
    organizationId: OrganizationId,
    request: TemplateSendRequest,
    wabaId?: string | null
  ) {
    const name = String(request.name).trim()
    const language = String(request.language?.code ?? "").trim()
    const found = yield* storage.templates.findByIdentity(organizationId, name, language, wabaId ?? null)
    if (Option.isNone(found)) return yield* new TemplateNotFound({ name, language })
    const template = found.value
    yield* requireSupported(template)
    if (template.status !== "APPROVED") {
      return yield* new TemplateNotApproved({ name: template.name, language: template.language, status: template.status })
    }
    const check = checkSendComponents(template, request.components)
    if (check.issues.length > 0) return yield* new TemplateParametersMismatch({ issues: check.issues })
    const resolved: ResolvedTemplate = {
      template,
      send: { name: template.name, language: { code: template.language }, components: check.components },
      text: check.text
    }
    return resolved
  })

  const service: TemplatesService = {
    create: Effect.fn("Templates.create")(function* (organizationId, input) {
      const content = yield* checked(input)
      const uuid = (yield* random.uuid()) as TemplateId
      const outcome = yield* storage.templates.create(organizationId, { uuid, content, now: yield* nowIso })
      // A create never answers NotFound; if a store did, that is a bug, not a client error.
      return yield* written(outcome, uuid, content).pipe(Effect.catchTag("RecordNotFound", Effect.die))
    }),
    update: Effect.fn("Templates.update")(function* (organizationId, id, input) {
      const current = yield* get(organizationId, id)
      if (isFromProvider(current)) {
        return yield* new TemplateManagedByMeta({ uuid: current.uuid, name: current.name, language: current.language })
      }
      const { uuid: _, created_at: __, updated_at: ___, ...stored } = current
      const content = yield* checked({ ...stored, ...definedFields(input) })
      const outcome = yield* storage.templates.update(organizationId, id, content, yield* nowIso)
      return yield* written(outcome, id, content)
    }),
    get,
    list: (organizationId, page) => storage.templates.list(organizationId, page),
    payload: (organizationId, id) =>
      Effect.flatMap(get(organizationId, id), (template) =>
        // Checked first: a template with problems is never read as our components.
        Effect.zipRight(requireSupported(template), Effect.sync(() => payloadOf(template)))
      ),
    resolveForSend,
    applyProviderCategory: Effect.fn("Templates.applyProviderCategory")(function* (organizationId, report) {
      const category = report.category.trim().toUpperCase()
      if (!(TemplateCategory.literals as ReadonlyArray<string>).includes(category)) return Option.none()
      const found = yield* findReported(organizationId, report)
      if (Option.isNone(found)) return Option.none()
      const { rejected_reason, status } = found.value
      const outcome = yield* storage.templates.updateStatus(organizationId, found.value.uuid, {
        status,
        rejected_reason,
        category: category as TemplateCategory,
        now: yield* nowIso
      })
      return outcome._tag === "Updated" ? Option.some(outcome.template) : Option.none()
    }),
    applyProviderStatus: Effect.fn("Templates.applyProviderStatus")(function* (organizationId, report) {
      const event = report.status.trim().toUpperCase()
      const status = event === "REINSTATED"
        ? "APPROVED"
        : (TemplateStatus.literals as ReadonlyArray<string>).includes(event) ? (event as TemplateStatus) : undefined
      if (status === undefined && event !== "FLAGGED") return Option.none()
      const found = yield* findReported(organizationId, report)
      if (Option.isNone(found)) return Option.none()
      if (status === undefined) {
        // FLAGGED: Meta warns that the template's quality is low; its status stays.
        yield* Effect.logInfo("WhatsApp template flagged by Meta: its quality is low, its status is unchanged").pipe(
          Effect.annotateLogs({ template_id: found.value.uuid, name: found.value.name, language: found.value.language })
        )
        return found
      }
      const rejected_reason = status === "REJECTED" ? (report.reason?.trim().slice(0, MAX_REJECTED_REASON_LENGTH) || null) : null
      const outcome = yield* changeTemplateStatus(organizationId, found.value.uuid, { status, rejected_reason, now: yield* nowIso }).pipe(
        Effect.provideService(Storage, storage)
      )
      return outcome._tag === "Updated" ? Option.some(outcome.template) : Option.none()
    })
  }

  /**
   * The template a status report names: by Meta's id first, then by name and language of
   * the report's account, else of no account.
   */
  const findReported = (
    organizationId: OrganizationId,
    report: Parameters<TemplatesService["applyProviderStatus" | "applyProviderCategory"]>[1]
  ) =>
    Effect.gen(function* () {
      const wabaId = report.waba_id ?? null
      if (report.provider_template_id !== undefined && report.provider_template_id !== null) {
        const byId = yield* storage.templates.findByProviderId(organizationId, report.provider_template_id)
        // Meta's ids are Meta-wide; one of another account of the organization is not this one.
        if (Option.isSome(byId) && (byId.value.waba_id === null || wabaId === null || byId.value.waba_id === wabaId)) return byId
      }
      return yield* storage.templates.findByIdentity(organizationId, report.name.trim(), report.language.trim().replace(/-/g, "_"), wabaId)
    })

  return service
})

/** `TemplateUnsupported` naming the template's first problem, when it has one. */
const requireSupported = (template: Template): Effect.Effect<void, TemplateUnsupported> => {
  const [first] = template.problems
  return first === undefined
    ? Effect.void
    : Effect.fail(new TemplateUnsupported({ name: template.name, language: template.language, path: first.path, problem: first.message }))
}

/**
 * Sets a template's status and `rejected_reason` (`TemplateRepository.updateStatus`:
 * `updated_at` and the `template.status_updated` event only when either changed) and,
 * when the status changed to anything but `APPROVED`, stops the organization's `sending`
 * broadcasts of that template with `template_not_approved` (docs/broadcasts.md "What
 * stops a broadcast"). Every status change of a template from Meta goes through here: the
 * status webhook, and the template sync. Fails only with the store's error.
 *
 * @category templates
 */
export const changeTemplateStatus = (
  organizationId: OrganizationId,
  id: TemplateId,
  update: TemplateStatusUpdate
): Effect.Effect<TemplateStatusOutcome, StorageError, Storage> =>
  Effect.gen(function* () {
    const storage = yield* Storage
    const outcome = yield* storage.templates.updateStatus(organizationId, id, update)
    if (outcome._tag === "Updated" && outcome.changed && outcome.template.status !== "APPROVED") {
      yield* stopBroadcastsOfTemplate(storage, organizationId, outcome.template, update.now)
    }
    return outcome
  })

/** The fields of a partial input that are set (`undefined` means "keep"). */
const definedFields = (input: Partial<TemplateInput>): Partial<TemplateInput> =>
  Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined))
