import { Effect, Option } from "effect"
import type { CountryCode } from "libphonenumber-js"
import { readBasicReply } from "../basic-replies/readBasicReply.js"
import type { BasicReplyId, BasicReplyInput } from "../model/basicReplies.js"
import { nowIso } from "../internal/time.js"
import { arrayAt, isRecord, type IssueCollector } from "../internal/validation.js"
import type { OrganizationId } from "../model/organizations.js"
import type { SecureRandomService } from "../random/SecureRandom.js"
import type { StorageError } from "../storage/errors.js"
import { type StorageService } from "../storage/Storage.js"
import type { TemplateContent, TemplateId } from "../model/templates.js"
import { readTemplate } from "../templates/readTemplate.js"
import { nameKey } from "../model/names.js"

// The `templates` and `basic_replies` keys of the admin import (docs/import.md),
// read with the rest of the document before anything is written, and written after the
// contacts step. Used by Imports.importDocument.

/**
 * What an import created or matched among templates and basic replies (docs/import.md):
 * template uuids keyed `"name/language"`, reply uuids keyed by trigger, each as written
 * in the file (trimmed); one key per distinct template or trigger, as first written.
 *
 * @category models
 */
export interface TemplatesAndRepliesResult {
  readonly templates: Readonly<Record<string, TemplateId>>
  readonly basic_replies: Readonly<Record<string, BasicReplyId>>
}

/** The checked templates and replies of a document, one per identity (the first one wins). */
export interface TemplatesAndRepliesDocument {
  readonly templates: ReadonlyArray<TemplateContent>
  readonly replies: ReadonlyArray<BasicReplyInput>
}

/**
 * Reads `templates` (`[{name, language, category, status, components}]`, rules of
 * `Templates.create`) and `basic_replies` (`[{name, trigger, response}]`, rules of
 * `BasicReplies.create`) from the document, adding every problem to `collector` with its
 * JSON path (`templates[0].components[1].text`, `basic_replies[2].trigger`). A later entry
 * with the identity of an earlier one (same name and language; same trigger,
 * case-insensitively) is the same record: the first entry is kept. A document that is not
 * an object adds nothing here (the caller reports it).
 */
export const readTemplatesAndReplies = (
  collector: IssueCollector,
  document: unknown,
  defaultCountry: CountryCode | undefined
): TemplatesAndRepliesDocument => {
  const root = isRecord(document) ? document : {}
  const templates = new Map<string, TemplateContent>()
  arrayAt(collector, root, "templates").forEach((entry, index) => {
    const content = readTemplate(collector, `templates[${index}]`, entry, defaultCountry)
    const key = templateKey(content)
    if (!templates.has(key)) templates.set(key, content)
  })
  const replies = new Map<string, BasicReplyInput>()
  arrayAt(collector, root, "basic_replies").forEach((entry, index) => {
    const reply = readBasicReply(collector, `basic_replies[${index}]`, entry)
    if (!replies.has(nameKey(reply.trigger))) replies.set(nameKey(reply.trigger), reply)
  })
  return { templates: [...templates.values()], replies: [...replies.values()] }
}

/**
 * Writes what {@link readTemplatesAndReplies} read: templates and replies that already
 * exist (same name and language; same trigger, case-insensitively) are matched and left
 * as they are, the others created. Fails only with `StorageError`.
 */
export const writeTemplatesAndReplies = (
  storage: StorageService,
  random: SecureRandomService,
  organizationId: OrganizationId,
  document: TemplatesAndRepliesDocument
): Effect.Effect<TemplatesAndRepliesResult, StorageError> =>
  Effect.gen(function* () {
    const templates: Record<string, TemplateId> = {}
    for (const content of document.templates) {
      const find = storage.templates.findByIdentity(organizationId, content.name, content.language)
      const existing = yield* find
      if (Option.isNone(existing)) {
        const uuid = (yield* random.uuid()) as TemplateId
        yield* storage.templates.create(organizationId, { uuid, content, now: yield* nowIso })
      }
      // Created now, or (after a concurrent create answered NameTaken) by someone else.
      const found = Option.isSome(existing) ? existing : yield* find
      templates[`${content.name}/${content.language}`] = yield* uuidOf(found, `template ${content.name}`)
    }
    const replies: Record<string, BasicReplyId> = {}
    for (const reply of document.replies) {
      const find = storage.basicReplies.findByTrigger(organizationId, reply.trigger)
      const existing = yield* find
      if (Option.isNone(existing)) {
        const uuid = (yield* random.uuid()) as BasicReplyId
        yield* storage.basicReplies.create(organizationId, { uuid, ...reply, now: yield* nowIso })
      }
      const found = Option.isSome(existing) ? existing : yield* find
      replies[reply.trigger] = yield* uuidOf(found, `basic reply ${reply.trigger}`)
    }
    return { templates, basic_replies: replies }
  })

/** The uuid of a record just created or matched; its absence is a bug of the store. */
const uuidOf = <Id extends string>(found: Option.Option<{ readonly uuid: Id }>, what: string): Effect.Effect<Id> =>
  Option.match(found, {
    onNone: () => Effect.dieMessage(`import: the ${what} is missing right after its create`),
    onSome: (record) => Effect.succeed(record.uuid)
  })

/** The identity of a template: its name key and exact language code. */
const templateKey = (content: TemplateContent): string => `${nameKey(content.name)}/${content.language}`

