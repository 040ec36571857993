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
import { TemplateNameTaken, TemplateNotApproved, TemplateNotFound, TemplateParametersMismatch } from "../model/templateErrors.js"
import {
  type ResolvedTemplate,
  type Template,
  type TemplateContent,
  type TemplateId,
  type TemplateInput,
  type TemplatePayload,
  type TemplateSendRequest,
  TemplateStatus
} from "../model/templates.js"
import { payloadOf } from "./payload.js"
import { readTemplate } from "./readTemplate.js"
import { checkSendComponents } from "./sendCheck.js"

/**
 * Message templates of an organization (`/templates`, docs/templates-and-replies.md). Templates are written
 * programmatically and by
 * the admin import (the API has no create route); the API lists them, reads one and builds
 * the send payload.
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
   * Changes a template: fields given replace the stored ones (`components` as a whole),
   * then the whole template is checked as in `create`.
   */
  readonly update: (
    organizationId: OrganizationId,
    id: TemplateId,
    input: Partial<TemplateInput>
  ) => Effect.Effect<Template, InvalidInput | TemplateNameTaken | RecordNotFound | StorageError>
  /** One template. */
  readonly get: (organizationId: OrganizationId, id: TemplateId) => Effect.Effect<Template, RecordNotFound | StorageError>
  /** One page of templates, newest first. */
  readonly list: (organizationId: OrganizationId, page: PageRequest) => Effect.Effect<Page<Template>, StorageError>
  /**
   * The send payload of a template, whatever its status (docs/templates-and-replies.md):
   * `{template: {name, language: {code}, components}, slots}` with one empty parameter
   * per placeholder of the HEADER and BODY, per media header and per URL button with
   * `{{1}}`; each slot is `template.components[component].parameters[index]`.
   */
  readonly payload: (
    organizationId: OrganizationId,
    id: TemplateId
  ) => Effect.Effect<TemplatePayload, RecordNotFound | StorageError>
  /**
   * Resolves the `template` object of a send (docs/templates-and-replies.md "Sending a template: how the `template` object is checked"): by name
   * (case-insensitively) and exact language code → else `TemplateNotFound`; status
   * APPROVED → else `TemplateNotApproved`; the parameters must fill every slot of the
   * payload one for one, none empty → else `TemplateParametersMismatch` listing every
   * problem. Returns the template, the normalised send object and the rendered text.
   */
  readonly resolveForSend: (
    organizationId: OrganizationId,
    request: TemplateSendRequest
  ) => Effect.Effect<
    ResolvedTemplate,
    TemplateNotFound | TemplateNotApproved | TemplateParametersMismatch | StorageError
  >
  /**
   * Applies a review status the provider reported (docs/whatsapp-webhooks.md "Template
   * statuses"): the template with this name (case-insensitively) and language (`en-US`
   * read as `en_US`) gets `status` and, for `REJECTED`, `rejected_reason` = `reason`
   * (`null` otherwise). `None` when the organization has no such template or `status`
   * is not one of {@link TemplateStatus}'s (nothing written).
   */
  readonly applyProviderStatus: (
    organizationId: OrganizationId,
    report: { readonly name: string; readonly language: string; readonly status: string; readonly reason: string | null }
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
    request: TemplateSendRequest
  ) {
    const name = String(request.name).trim()
    const language = String(request.language?.code ?? "").trim()
    const found = yield* storage.templates.findByIdentity(organizationId, name, language)
    if (Option.isNone(found)) return yield* new TemplateNotFound({ name, language })
    const template = found.value
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
      const { uuid: _, created_at: __, updated_at: ___, ...stored } = current
      const content = yield* checked({ ...stored, ...definedFields(input) })
      const outcome = yield* storage.templates.update(organizationId, id, content, yield* nowIso)
      return yield* written(outcome, id, content)
    }),
    get,
    list: (organizationId, page) => storage.templates.list(organizationId, page),
    payload: (organizationId, id) => Effect.map(get(organizationId, id), payloadOf),
    resolveForSend,
    applyProviderStatus: Effect.fn("Templates.applyProviderStatus")(function* (organizationId, report) {
      const status = (TemplateStatus.literals as ReadonlyArray<string>).includes(report.status)
        ? (report.status as TemplateStatus)
        : undefined
      if (status === undefined) return Option.none()
      const found = yield* storage.templates.findByIdentity(organizationId, report.name.trim(), report.language.trim().replace(/-/g, "_"))
      if (Option.isNone(found)) return Option.none()
      const rejected_reason = status === "REJECTED" ? (report.reason?.trim().slice(0, MAX_REJECTED_REASON_LENGTH) ?? null) : null
      const outcome = yield* storage.templates.updateStatus(organizationId, found.value.uuid, { status, rejected_reason, now: yield* nowIso })
      return outcome._tag === "Updated" ? Option.some(outcome.template) : Option.none()
    })
  }
  return service
})

/** Longest `rejected_reason` kept; a longer reason is cut. */
const MAX_REJECTED_REASON_LENGTH = 1024

/** The fields of a partial input that are set (`undefined` means "keep"). */
const definedFields = (input: Partial<TemplateInput>): Partial<TemplateInput> =>
  Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined))
