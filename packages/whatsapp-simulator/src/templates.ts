import { randomInt } from "node:crypto"

/**
 * The statuses a template has in Meta's list API (`GET /{version}/{waba_id}/message_templates`).
 *
 * @category templates
 */
export const TEMPLATE_STATUSES = [
  "APPROVED",
  "PENDING",
  "REJECTED",
  "PAUSED",
  "DISABLED",
  "IN_APPEAL",
  "PENDING_DELETION",
  "DELETED",
  "LIMIT_EXCEEDED",
  "ARCHIVED",
  "LOCKED"
] as const

/**
 * A status of Meta's list API ({@link TEMPLATE_STATUSES}).
 *
 * @category templates
 */
export type TemplateStatus = (typeof TEMPLATE_STATUSES)[number]

/**
 * The `event`s of Meta's `message_template_status_update` webhook the simulator posts: every
 * {@link TemplateStatus}, plus `FLAGGED` (the template keeps its status), `REINSTATED` and
 * `UNARCHIVED` (the template becomes `APPROVED`).
 *
 * @category templates
 */
export const TEMPLATE_STATUS_EVENTS: ReadonlyArray<string> = [...TEMPLATE_STATUSES, "FLAGGED", "REINSTATED", "UNARCHIVED"]

/**
 * The categories a template may be submitted with (`POST …/message_templates`).
 *
 * @category templates
 */
export const TEMPLATE_CATEGORIES: ReadonlyArray<string> = ["MARKETING", "UTILITY", "AUTHENTICATION"]

/**
 * How long Meta refuses a new template under a deleted template's name and language (30
 * days): its `POST …/message_templates` answers code 100, subcode 2388023.
 *
 * @category templates
 */
export const DELETED_NAME_BLOCK_MS = 30 * 24 * 60 * 60 * 1000

/**
 * One message template the simulator holds for a WhatsApp Business Account, as Meta's list
 * API shows it:
 * - `id`: Meta's id (a numeric string of 16 digits, below `Number.MAX_SAFE_INTEGER`: the
 *   webhooks carry it as a number);
 * - `waba_id`: the account it belongs to;
 * - `name`, `language` (`en_US`): together unique in the account;
 * - `status` ({@link TemplateStatus}), `category` (`MARKETING`, `UTILITY`, `AUTHENTICATION`);
 * - `components`: the JSON list as submitted or seeded, kept as it is;
 * - `rejected_reason`: `"NONE"` unless rejected (Meta's spelling of none).
 *
 * @category templates
 */
export interface SimulatedTemplate {
  readonly id: string
  readonly waba_id: string
  readonly name: string
  readonly language: string
  readonly status: TemplateStatus
  readonly category: string
  readonly components: unknown
  readonly rejected_reason: string
}

/**
 * A template as seeded (Meta's state before a test): `name`, `language`, `category` and
 * `components` (any JSON list: odd ones too, to see how a client copes), and optionally
 * `status` (default `APPROVED`), `id` (digits; default a fresh one) and `rejected_reason`
 * (default `"NONE"`).
 *
 * @category templates
 */
export interface TemplateSeed {
  readonly name: string
  readonly language: string
  readonly category: string
  readonly components: unknown
  readonly status?: TemplateStatus
  readonly id?: string
  readonly rejected_reason?: string
}

/**
 * Names one template of an account: by `id`, or by `name` and `language`.
 *
 * @category templates
 */
export interface TemplateReference {
  readonly waba_id: string
  readonly id?: string
  readonly name?: string
  readonly language?: string
}

/**
 * A template the control API or a method was asked about that the simulator does not hold
 * (the control API answers 404).
 *
 * @category templates
 */
export class TemplateNotFoundError extends Error {
  constructor(message: string) {
    super(message)
    this.name = "TemplateNotFoundError"
  }
}

/** One page of an account's templates, and whether there are more on either side. */
export interface TemplatePage {
  readonly templates: ReadonlyArray<SimulatedTemplate>
  /** The cursor of the first and of the last template of the page (`null` when empty). */
  readonly before: string | null
  readonly after: string | null
  readonly hasPrevious: boolean
  readonly hasNext: boolean
}

/** What narrows a list: Meta's `name` (a part of the name, any case), `status`, `language`, `category`. */
export interface TemplateFilter {
  readonly name?: string
  readonly status?: string
  readonly language?: string
  readonly category?: string
}

interface Entry {
  readonly seq: number
  template: SimulatedTemplate
}

/**
 * The message templates the simulator holds, per WhatsApp Business Account, in the order
 * they were added (the order the list API pages them in), and the names Meta still blocks
 * after a deletion ({@link DELETED_NAME_BLOCK_MS}).
 *
 * @category templates
 */
export class TemplateLibrary {
  private readonly entries = new Map<string, Entry>()
  /** `waba_id`, name and language → when they were deleted (ms since the epoch). */
  private readonly deletedAt = new Map<string, number>()
  private seq = 0

  /** The templates of `waba_id` (every account's when omitted), in the order they were added. */
  list(waba_id?: string): ReadonlyArray<SimulatedTemplate> {
    return this.sorted().filter((entry) => waba_id === undefined || entry.template.waba_id === waba_id).map((entry) => entry.template)
  }

  /** The template with Meta's id `id`, if the simulator holds it. */
  get(id: string): SimulatedTemplate | undefined {
    return this.entries.get(id)?.template
  }

  /**
   * The template `reference` names (by `id`, else by `name` and `language`) in its account;
   * throws a {@link TemplateNotFoundError} when there is none, a `TypeError` when the
   * reference names neither.
   */
  find(reference: TemplateReference): SimulatedTemplate {
    const { waba_id, id, name, language } = reference
    if (id !== undefined) {
      const template = this.get(String(id))
      if (template === undefined || template.waba_id !== waba_id) throw new TemplateNotFoundError(`no template ${id} in the WhatsApp Business Account ${waba_id}`)
      return template
    }
    if (typeof name !== "string" || typeof language !== "string") throw new TypeError("name a template by id, or by name and language")
    const template = this.byNameAndLanguage(waba_id, name, language)
    if (template === undefined) throw new TemplateNotFoundError(`no template ${name} (${language}) in the WhatsApp Business Account ${waba_id}`)
    return template
  }

  /**
   * Puts `seeds` into `waba_id` as Meta already holds them: each replaces the template of its
   * name and language (keeping that one's id unless it gives another) and lifts a deletion's
   * block on them. Checks every seed before keeping any; a `TypeError` names what is wrong.
   */
  seed(waba_id: string, seeds: ReadonlyArray<TemplateSeed>): ReadonlyArray<SimulatedTemplate> {
    if (!Array.isArray(seeds)) throw new TypeError("templates must be a list")
    const checked = seeds.map((seed, index) => checkSeed(seed, `templates[${index}]`))
    const keys = new Set<string>()
    const ids = new Set<string>()
    for (const [index, seed] of checked.entries()) {
      const key = keyOf(waba_id, seed.name, seed.language)
      if (keys.has(key)) throw new TypeError(`templates[${index}] repeats ${seed.name} (${seed.language})`)
      keys.add(key)
      if (seed.id === undefined) continue
      if (ids.has(seed.id)) throw new TypeError(`templates[${index}] repeats the id ${seed.id}`)
      ids.add(seed.id)
      const holder = this.get(seed.id)
      if (holder !== undefined && keyOf(holder.waba_id, holder.name, holder.language) !== key) {
        throw new TypeError(`templates[${index}]: the id ${seed.id} is already ${holder.name} (${holder.language}) of the WhatsApp Business Account ${holder.waba_id}`)
      }
    }
    return checked.map((seed) => {
      const existing = this.byNameAndLanguage(waba_id, seed.name, seed.language)
      const id = seed.id ?? existing?.id ?? this.newId()
      const template: SimulatedTemplate = {
        id,
        waba_id,
        name: seed.name,
        language: seed.language,
        status: seed.status ?? "APPROVED",
        category: seed.category,
        components: seed.components,
        rejected_reason: seed.rejected_reason ?? "NONE"
      }
      const seq = existing === undefined ? ++this.seq : this.entries.get(existing.id)!.seq
      if (existing !== undefined) this.entries.delete(existing.id)
      this.entries.set(id, { seq, template })
      this.deletedAt.delete(keyOf(waba_id, seed.name, seed.language))
      return template
    })
  }

  /**
   * Whether `waba_id` may take a new template of `name` and `language` at `now`: `"exists"`
   * when it holds one (any status), `"being_deleted"` when one was deleted less than
   * {@link DELETED_NAME_BLOCK_MS} before, else `"free"`.
   */
  availability(waba_id: string, name: string, language: string, now: number): "free" | "exists" | "being_deleted" {
    if (this.byNameAndLanguage(waba_id, name, language) !== undefined) return "exists"
    const deleted = this.deletedAt.get(keyOf(waba_id, name, language))
    return deleted !== undefined && now - deleted < DELETED_NAME_BLOCK_MS ? "being_deleted" : "free"
  }

  /**
   * A new `PENDING` template, as Meta keeps a submission, or why it cannot be made
   * ({@link availability}). The fields are checked by the caller.
   */
  create(
    waba_id: string,
    fields: { readonly name: string; readonly language: string; readonly category: string; readonly components: unknown },
    now: number
  ): SimulatedTemplate | "exists" | "being_deleted" {
    const availability = this.availability(waba_id, fields.name, fields.language, now)
    if (availability !== "free") return availability
    const template: SimulatedTemplate = { id: this.newId(), waba_id, ...fields, status: "PENDING", rejected_reason: "NONE" }
    this.entries.set(template.id, { seq: ++this.seq, template })
    return template
  }

  /**
   * Deletes the templates named `name` in `waba_id`: every language, or with `hsm_id` only
   * the one of that id (which must bear that name); blocks their names and languages from
   * new submissions. Answers what it deleted (none: nothing matched).
   */
  delete(waba_id: string, name: string, hsm_id: string | null, now: number): ReadonlyArray<SimulatedTemplate> {
    const doomed = this.list(waba_id).filter((template) => template.name === name && (hsm_id === null || template.id === hsm_id))
    for (const template of doomed) {
      this.entries.delete(template.id)
      this.deletedAt.set(keyOf(waba_id, template.name, template.language), now)
    }
    return doomed
  }

  /** Replaces the template `id`'s `status` and `rejected_reason`; answers it as it now is. */
  setStatus(id: string, status: TemplateStatus, rejected_reason: string): SimulatedTemplate {
    return this.replace(id, { status, rejected_reason })
  }

  /** Replaces the template `id`'s `category`; answers it as it now is. */
  setCategory(id: string, category: string): SimulatedTemplate {
    return this.replace(id, { category })
  }

  /**
   * One page of `waba_id`'s templates matching `filter`: the first `limit` after the cursor
   * `after`, or the last `limit` before the cursor `before`, or the first `limit`. Cursors
   * survive deletions (they name a position, not an index). `"bad_cursor"` when a cursor is
   * not one of the simulator's.
   */
  page(waba_id: string, options: { readonly limit: number; readonly after?: string; readonly before?: string; readonly filter?: TemplateFilter }): TemplatePage | "bad_cursor" {
    const matching = this.sorted().filter((entry) => entry.template.waba_id === waba_id && matches(entry.template, options.filter ?? {}))
    let window: Array<Entry>
    if (options.after !== undefined) {
      const seq = seqOf(options.after)
      if (seq === null) return "bad_cursor"
      window = matching.filter((entry) => entry.seq > seq).slice(0, options.limit)
    } else if (options.before !== undefined) {
      const seq = seqOf(options.before)
      if (seq === null) return "bad_cursor"
      const earlier = matching.filter((entry) => entry.seq < seq)
      window = earlier.slice(Math.max(0, earlier.length - options.limit))
    } else {
      window = matching.slice(0, options.limit)
    }
    const first = window[0]
    const last = window.at(-1)
    return {
      templates: window.map((entry) => entry.template),
      before: first === undefined ? null : cursorOf(first.seq),
      after: last === undefined ? null : cursorOf(last.seq),
      hasPrevious: first !== undefined && matching.some((entry) => entry.seq < first.seq),
      hasNext: last !== undefined && matching.some((entry) => entry.seq > last.seq)
    }
  }

  /** Forgets every template and every deleted name. */
  clear(): void {
    this.entries.clear()
    this.deletedAt.clear()
    this.seq = 0
  }

  private byNameAndLanguage(waba_id: string, name: string, language: string): SimulatedTemplate | undefined {
    for (const { template } of this.entries.values()) {
      if (template.waba_id === waba_id && template.name === name && template.language === language) return template
    }
    return undefined
  }

  private replace(id: string, change: Partial<SimulatedTemplate>): SimulatedTemplate {
    const entry = this.entries.get(id)
    if (entry === undefined) throw new TemplateNotFoundError(`no template ${id}`)
    entry.template = { ...entry.template, ...change }
    return entry.template
  }

  private sorted(): Array<Entry> {
    return [...this.entries.values()].sort((a, b) => a.seq - b.seq)
  }

  /** A fresh id: 16 digits, starting with 1 (below `Number.MAX_SAFE_INTEGER`), unused. */
  private newId(): string {
    for (;;) {
      const id = `1${String(randomInt(0, 1_000_000_000)).padStart(9, "0")}${String(randomInt(0, 1_000_000)).padStart(6, "0")}`
      if (!this.entries.has(id)) return id
    }
  }
}

const keyOf = (waba_id: string, name: string, language: string) => JSON.stringify([waba_id, name, language])

const CURSOR_PREFIX = "simulator-template:"

/** A cursor: base64url text naming a position, as opaque as Meta's. */
const cursorOf = (seq: number): string => Buffer.from(`${CURSOR_PREFIX}${seq}`).toString("base64url")

const seqOf = (cursor: string): number | null => {
  const text = Buffer.from(cursor, "base64url").toString("utf8")
  if (!text.startsWith(CURSOR_PREFIX)) return null
  const digits = text.slice(CURSOR_PREFIX.length)
  return /^\d+$/.test(digits) ? Number(digits) : null
}

const matches = (template: SimulatedTemplate, filter: TemplateFilter): boolean => {
  const same = (value: string, wanted: string | undefined) =>
    wanted === undefined || wanted.split(",").some((one) => one.trim().toUpperCase() === value.toUpperCase())
  return (
    (filter.name === undefined || template.name.toLowerCase().includes(filter.name.toLowerCase())) &&
    same(template.status, filter.status) &&
    (filter.language === undefined || filter.language.split(",").some((one) => one.trim() === template.language)) &&
    same(template.category, filter.category)
  )
}

/** The seed itself (category upper-cased), or a `TypeError` naming its bad field. */
const checkSeed = (seed: TemplateSeed, where: string): TemplateSeed => {
  if (typeof seed !== "object" || seed === null || Array.isArray(seed)) throw new TypeError(`${where} must be an object`)
  const text = (field: keyof TemplateSeed) => {
    const value = seed[field]
    if (typeof value !== "string" || value.trim() === "") throw new TypeError(`${where}.${field} must be a non-empty string`)
    return value
  }
  text("name")
  text("language")
  if (!/^[A-Za-z_]+$/.test(text("category"))) throw new TypeError(`${where}.category must be a category such as UTILITY`)
  if (!Array.isArray(seed.components)) throw new TypeError(`${where}.components must be a list (Meta's components, kept as they are)`)
  if (seed.status !== undefined && !(TEMPLATE_STATUSES as ReadonlyArray<string>).includes(seed.status)) {
    throw new TypeError(`${where}.status must be one of ${TEMPLATE_STATUSES.join(", ")}`)
  }
  if (seed.id !== undefined && !(typeof seed.id === "string" && /^\d{1,16}$/.test(seed.id) && Number(seed.id) <= Number.MAX_SAFE_INTEGER)) {
    throw new TypeError(`${where}.id must be Meta's id: digits, at most ${Number.MAX_SAFE_INTEGER}`)
  }
  if (seed.rejected_reason !== undefined) text("rejected_reason")
  return { ...seed, category: seed.category.toUpperCase() }
}
