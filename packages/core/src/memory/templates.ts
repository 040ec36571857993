import { Effect, Option } from "effect"
import type { OrganizationId } from "../model/organizations.js"
import type { Template, TemplateId } from "../model/templates.js"
import type { TemplateRepository, TemplateWrite } from "../storage/TemplateRepository.js"
import { type MemoryState, pageOf } from "./state.js"
import { recordWebhookEvent } from "./webhooks.js"
import { nameKey } from "../model/names.js"

/** A template as the memory store keeps it. */
interface TemplateRow extends Template {
  readonly organization_id: OrganizationId
  readonly name_key: string
}

/**
 * The templates repository of the memory store. It keeps its own map (templates refer to
 * nothing else in the store; `state` is for the webhook outbox); every method is
 * synchronous, so each is atomic. The identity is (`waba_id`, `name_key`, `language`),
 * `null` accounts equal to each other. Components and problems are copied on write, so
 * callers cannot change what is stored.
 */
export const templateRepository = (state: MemoryState): TemplateRepository => {
  const rows = new Map<TemplateId, TemplateRow>()

  const owned = (organizationId: OrganizationId, id: TemplateId) => {
    const row = rows.get(id)
    return row !== undefined && row.organization_id === organizationId ? row : undefined
  }
  /** The template of exactly this identity (`wabaId` `null`: one with no account). */
  const holder = (organizationId: OrganizationId, wabaId: string | null, name: string, language: string) => {
    const key = nameKey(name)
    for (const row of rows.values()) {
      if (row.organization_id === organizationId && row.waba_id === wabaId && row.name_key === key && row.language === language) return row
    }
    return undefined
  }
  const write = (
    base: Pick<TemplateRow, "organization_id" | "uuid" | "created_at"> & { readonly rejected_reason?: string | null },
    { rejected_reason: given, ...content }: TemplateWrite,
    now: string
  ) => {
    const components = structuredClone(content.components)
    const problems = content.problems.map((problem) => ({ ...problem }))
    const rejected_reason = given !== undefined ? given : content.status === "REJECTED" ? (base.rejected_reason ?? null) : null
    const row: TemplateRow = {
      ...base,
      ...content,
      components,
      problems,
      rejected_reason,
      name_key: nameKey(content.name),
      updated_at: now
    }
    rows.set(row.uuid, row)
    return { _tag: "Written", template: templateOf(row) } as const
  }

  return {
    create: (organizationId, { uuid, content, now }) =>
      Effect.sync(() =>
        holder(organizationId, content.waba_id, content.name, content.language) !== undefined
          ? ({ _tag: "NameTaken" } as const)
          : write({ organization_id: organizationId, uuid, created_at: now, rejected_reason: null }, { rejected_reason: null, ...content }, now)
      ),
    update: (organizationId, id, content, now, guard) =>
      Effect.sync(() => {
        const row = owned(organizationId, id)
        if (row === undefined) return { _tag: "NotFound" } as const
        if (isStale(row, guard?.unchangedSince)) return { _tag: "Stale", template: templateOf(row) } as const
        const other = holder(organizationId, content.waba_id, content.name, content.language)
        if (other !== undefined && other.uuid !== id) return { _tag: "NameTaken" } as const
        return write(row, content, now)
      }),
    updateStatus: (organizationId, id, { now, rejected_reason, status, category, unchangedSince }) =>
      Effect.sync(() => {
        const row = owned(organizationId, id)
        if (row === undefined) return { _tag: "NotFound" } as const
        if (isStale(row, unchangedSince)) return { _tag: "Stale", template: templateOf(row) } as const
        const changed = row.status !== status || row.rejected_reason !== rejected_reason || (category !== undefined && row.category !== category)
        const updated: TemplateRow = changed ? { ...row, status, rejected_reason, category: category ?? row.category, updated_at: now } : row
        rows.set(id, updated)
        const event = category === undefined ? "template.status_updated" : "template.category_updated"
        if (changed) recordWebhookEvent(state, organizationId, event, now, () => templateOf(updated))
        return { _tag: "Updated", template: templateOf(updated), changed } as const
      }),
    deleteUnsubmitted: (organizationId, id) =>
      Effect.sync(() => {
        const row = owned(organizationId, id)
        return row !== undefined && row.provider_template_id === null && rows.delete(id)
      }),
    findById: (organizationId, id) => Effect.sync(() => Option.map(Option.fromNullable(owned(organizationId, id)), templateOf)),
    findByIdentity: (organizationId, name, language, wabaId = null) =>
      Effect.sync(() => {
        const found = (wabaId === null ? undefined : holder(organizationId, wabaId, name, language)) ??
          holder(organizationId, null, name, language)
        return Option.map(Option.fromNullable(found), templateOf)
      }),
    findByProviderId: (organizationId, providerTemplateId) =>
      Effect.sync(() => {
        const found = [...rows.values()]
          .filter((row) => row.organization_id === organizationId && row.provider_template_id === providerTemplateId)
          .sort((a, b) => (a.created_at === b.created_at ? (a.uuid < b.uuid ? -1 : 1) : a.created_at < b.created_at ? -1 : 1))
        return Option.map(Option.fromNullable(found[0]), templateOf)
      }),
    list: (organizationId, request) =>
      Effect.sync(() => {
        const page = pageOf(rows.values(), organizationId, request)
        return { items: page.items.map(templateOf), total: page.total }
      })
  }
}

/** The record of a stored row. */
const templateOf = ({ organization_id: _, name_key: __, ...template }: TemplateRow): Template => template

/** Whether a guarded write must not touch `row`: it changed after `unchangedSince` (ISO 8601). */
const isStale = (row: { readonly updated_at: string }, unchangedSince: string | undefined): boolean =>
  unchangedSince !== undefined && row.updated_at > unchangedSince
