import { Effect, Option } from "effect"
import type { BasicReply, BasicReplyId } from "../model/basicReplies.js"
import type { OrganizationId } from "../model/organizations.js"
import type { BasicReplyRepository } from "../storage/BasicReplyRepository.js"
import { pageOf } from "./state.js"
import { nameKey } from "../model/names.js"

/** A basic reply as the memory store keeps it. */
interface BasicReplyRow extends BasicReply {
  readonly organization_id: OrganizationId
  readonly trigger_key: string
}

/**
 * The basic-replies repository of the memory store. It keeps its own map (replies refer
 * to nothing else in the store); every method is synchronous, so each is atomic.
 */
export const basicReplyRepository = (): BasicReplyRepository => {
  const rows = new Map<BasicReplyId, BasicReplyRow>()

  const byTrigger = (organizationId: OrganizationId, trigger: string) => {
    const key = nameKey(trigger)
    for (const row of rows.values()) if (row.organization_id === organizationId && row.trigger_key === key) return row
    return undefined
  }

  return {
    create: (organizationId, { uuid, name, trigger, response, now }) =>
      Effect.sync(() => {
        if (byTrigger(organizationId, trigger) !== undefined) return { _tag: "TriggerTaken" } as const
        const row: BasicReplyRow = {
          organization_id: organizationId,
          uuid,
          name,
          trigger,
          trigger_key: nameKey(trigger),
          response,
          created_at: now,
          updated_at: now
        }
        rows.set(uuid, row)
        return { _tag: "Created", reply: replyOf(row) } as const
      }),
    findById: (organizationId, id) =>
      Effect.sync(() => {
        const row = rows.get(id)
        return row !== undefined && row.organization_id === organizationId ? Option.some(replyOf(row)) : Option.none()
      }),
    findByTrigger: (organizationId, text) =>
      Effect.sync(() => Option.map(Option.fromNullable(byTrigger(organizationId, text)), replyOf)),
    list: (organizationId, request) =>
      Effect.sync(() => {
        const page = pageOf(rows.values(), organizationId, request)
        return { items: page.items.map(replyOf), total: page.total }
      })
  }
}

/** The record of a stored row. */
const replyOf = ({ organization_id: _, trigger_key: __, ...reply }: BasicReplyRow): BasicReply => reply
