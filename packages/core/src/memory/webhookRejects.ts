import { Effect } from "effect"
import type { WebhookReject } from "../model/whatsapp.js"
import type { WebhookRejectRepository } from "../storage/WebhookRejectRepository.js"

/** The webhook rejects repository of the memory store: one array, newest last; `item` kept as a copy of its JSON. */
export const webhookRejectRepository = (): WebhookRejectRepository => {
  let rejects: Array<WebhookReject> = []
  return {
    insert: (added) =>
      Effect.sync(() => {
        for (const reject of added) {
          if (rejects.some((stored) => stored.id === reject.id)) continue
          rejects.push({ ...reject, item: JSON.parse(JSON.stringify(reject.item ?? null)) })
        }
      }),
    list: ({ organizationId, limit }) =>
      Effect.sync(() =>
        rejects
          .filter((reject) => organizationId === undefined || reject.organization_id === organizationId)
          .sort((a, b) => (a.received_at === b.received_at ? b.id.localeCompare(a.id) : b.received_at.localeCompare(a.received_at)))
          .slice(0, limit)
      ),
    prune: (before) =>
      Effect.sync(() => {
        const kept = rejects.filter((reject) => reject.received_at >= before)
        const pruned = rejects.length - kept.length
        rejects = kept
        return pruned
      })
  }
}
