import { Effect, Option } from "effect"
import type { OrganizationId } from "../model/organizations.js"
import type { Template, TemplateContent, TemplateId } from "../model/templates.js"
import type { TemplateRepository } from "../storage/TemplateRepository.js"
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
 * synchronous, so each is atomic. Components are copied on write, so callers cannot
 * change what is stored.
 */
export const templateRepository = (state: MemoryState): TemplateRepository => {
  const rows = new Map<TemplateId, TemplateRow>()

  const owned = (organizationId: OrganizationId, id: TemplateId) => {
    const row = rows.get(id)
    return row !== undefined && row.organization_id === organizationId ? row : undefined
  }
  const holder = (organizationId: OrganizationId, name: string, language: string) => {
    const key = nameKey(name)
    for (const row of rows.values()) {
      if (row.organization_id === organizationId && row.name_key === key && row.language === language) return row
    }
    return undefined
  }
  const write = (
    base: Pick<TemplateRow, "organization_id" | "uuid" | "created_at"> & { readonly rejected_reason?: string | null },
    content: TemplateContent, now: string) => {
    const components = structuredClone(content.components)
    const rejected_reason = content.status === "REJECTED" ? (base.rejected_reason ?? null) : null
    const row: TemplateRow = { ...base, ...content, components, rejected_reason, name_key: nameKey(content.name), updated_at: now }
    rows.set(row.uuid, row)
    return { _tag: "Written", template: templateOf(row) } as const
  }

  return {
    create: (organizationId, { uuid, content, now }) =>
      Effect.sync(() =>
        holder(organizationId, content.name, content.language) !== undefined
          ? ({ _tag: "NameTaken" } as const)
          : write({ organization_id: organizationId, uuid, created_at: now }, content, now)
      ),
    update: (organizationId, id, content, now) =>
      Effect.sync(() => {
        const row = owned(organizationId, id)
        if (row === undefined) return { _tag: "NotFound" } as const
        const other = holder(organizationId, content.name, content.language)
        if (other !== undefined && other.uuid !== id) return { _tag: "NameTaken" } as const
        return write(row, content, now)
      }),
    updateStatus: (organizationId, id, { now, rejected_reason, status }) =>
      Effect.sync(() => {
        const row = owned(organizationId, id)
        if (row === undefined) return { _tag: "NotFound" } as const
        const changed = row.status !== status || row.rejected_reason !== rejected_reason
        const updated: TemplateRow = changed ? { ...row, status, rejected_reason, updated_at: now } : row
        rows.set(id, updated)
        if (changed) recordWebhookEvent(state, organizationId, "template.status_updated", now, () => templateOf(updated))
        return { _tag: "Updated", template: templateOf(updated), changed } as const
      }),
    findById: (organizationId, id) => Effect.sync(() => Option.map(Option.fromNullable(owned(organizationId, id)), templateOf)),
    findByIdentity: (organizationId, name, language) =>
      Effect.sync(() => Option.map(Option.fromNullable(holder(organizationId, name, language)), templateOf)),
    list: (organizationId, request) =>
      Effect.sync(() => {
        const page = pageOf(rows.values(), organizationId, request)
        return { items: page.items.map(templateOf), total: page.total }
      })
  }
}

/** The record of a stored row. */
const templateOf = ({ organization_id: _, name_key: __, ...template }: TemplateRow): Template => template
