import { Effect, Option } from "effect"
import type { Broadcast, BroadcastAudience, BroadcastCounts, BroadcastId, BroadcastRecipient } from "../model/broadcasts.js"
import type { ContactId } from "../model/contacts.js"
import type { MessageFailure, MessageId } from "../model/messages.js"
import type { OrganizationId } from "../model/organizations.js"
import type { BroadcastRepository } from "../storage/BroadcastRepository.js"
import { appendMessage } from "./chats.js"
import { contactOf } from "./contacts.js"
import { withoutOrganization } from "./messages.js"
import { released } from "./outbox.js"
import type { BroadcastRow, MemoryState, MessageRow } from "./state.js"
import { recordWebhookEvent } from "./webhooks.js"

/** The broadcast's recipients whose contact still exists (a deleted contact takes its messages with it): contact uuid → message uuid. */
const liveRecipients = (state: MemoryState, id: BroadcastId): Array<[ContactId, MessageId]> =>
  [...(state.broadcastRecipients.get(id) ?? [])].filter(([contactId]) => state.contacts.has(contactId))

/** The broadcast's counts, read from its recipients' current statuses. */
const countsOf = (state: MemoryState, id: BroadcastId): BroadcastCounts => {
  const counts = { total: 0, queued: 0, sending: 0, sent: 0, delivered: 0, read: 0, failed: 0 }
  for (const [, messageId] of liveRecipients(state, id)) {
    const message = state.messages.get(messageId)
    if (message === undefined) continue
    counts.total++
    counts[message.status === "scheduled" ? "queued" : message.status]++
  }
  return counts
}

const recordOf = (state: MemoryState, row: BroadcastRow): Broadcast => {
  const { organization_id: _, start_cursor: __, start_finished: ___, start_lease: ____, start_lease_until: _____, ...rest } = row
  return { ...rest, counts: countsOf(state, row.uuid) }
}

const owned = (state: MemoryState, organizationId: OrganizationId, id: BroadcastId): BroadcastRow | undefined => {
  const row = state.broadcasts.get(id)
  return row?.organization_id === organizationId ? row : undefined
}

/** The audience's contacts of the organization that exist now, each once, in ascending uuid order. */
const audienceIds = (state: MemoryState, organizationId: OrganizationId, audience: BroadcastAudience): Array<ContactId> => {
  const ids = new Set<ContactId>()
  for (const group of audience.group_uuids) {
    if (state.groups.get(group)?.organization_id !== organizationId) continue
    for (const id of state.groupMembers.get(group) ?? []) ids.add(id)
  }
  for (const label of audience.label_uuids) {
    if (state.labels.get(label)?.organization_id !== organizationId) continue
    for (const id of state.labelledContacts.get(label) ?? []) ids.add(id)
  }
  for (const id of audience.contact_uuids) ids.add(id)
  return [...ids].filter((id) => state.contacts.get(id)?.organization_id === organizationId).sort()
}

/** Fails each `queued` recipient of the broadcast with `failure` (event each). */
const failQueued = (state: MemoryState, organizationId: OrganizationId, id: BroadcastId, failure: MessageFailure, now: string) => {
  for (const messageId of state.broadcastRecipients.get(id)?.values() ?? []) {
    const row = state.messages.get(messageId)
    const dispatch = state.dispatch.get(messageId)
    if (row === undefined || row.status !== "queued" || dispatch === undefined) continue
    const failed: MessageRow = { ...row, status: "failed", failure, next_attempt_at: null, updated_at: now }
    state.messages.set(messageId, failed)
    state.dispatch.set(messageId, released(dispatch))
    recordWebhookEvent(state, organizationId, "message.status_updated", now, () => withoutOrganization(failed))
  }
}

/** Ends a `scheduled` or `sending` broadcast as `status`; `undefined` when it already ended. */
const end = (
  state: MemoryState,
  organizationId: OrganizationId,
  row: BroadcastRow,
  status: "cancelled" | "stopped",
  failure: MessageFailure,
  now: string
): BroadcastRow | undefined => {
  if (row.status !== "scheduled" && row.status !== "sending") return undefined
  const ended: BroadcastRow = {
    ...row,
    status,
    completed_at: now,
    stopped_reason: status === "stopped" ? failure : null,
    start_lease: null,
    start_lease_until: null
  }
  state.broadcasts.set(row.uuid, ended)
  failQueued(state, organizationId, row.uuid, failure, now)
  return ended
}

const waiting = (state: MemoryState, id: BroadcastId): boolean => {
  for (const [, messageId] of liveRecipients(state, id)) {
    const status = state.messages.get(messageId)?.status
    if (status === "queued" || status === "sending") return true
  }
  return false
}

/** The broadcasts repository of the memory store; every method is synchronous, so atomic. */
export const broadcastRepository = (state: MemoryState): BroadcastRepository => ({
  create: (organizationId, broadcast) =>
    Effect.sync(() => {
      // A held uuid (an Idempotency-Key's) whose other writer stored first: that broadcast.
      const stored = owned(state, organizationId, broadcast.uuid)
      if (stored !== undefined) return recordOf(state, stored)
      const { now, ...fields } = broadcast
      const row: BroadcastRow = {
        ...fields,
        organization_id: organizationId,
        created_at: now,
        started_at: broadcast.status === "sending" ? now : null,
        completed_at: null,
        stopped_reason: null,
        start_cursor: null,
        start_finished: false,
        start_lease: null,
        start_lease_until: null
      }
      state.broadcasts.set(broadcast.uuid, row)
      return recordOf(state, row)
    }),
  findById: (organizationId, id) =>
    Effect.sync(() => Option.map(Option.fromNullable(owned(state, organizationId, id)), (row) => recordOf(state, row))),
  list: (organizationId, { limit, after }) =>
    Effect.sync(() =>
      [...state.broadcasts.values()]
        .filter((row) => row.organization_id === organizationId)
        .sort((a, b) => (a.created_at === b.created_at ? (a.uuid < b.uuid ? 1 : -1) : a.created_at < b.created_at ? 1 : -1))
        .filter((row) => after === null || row.created_at < after.created_at || (row.created_at === after.created_at && row.uuid < after.uuid))
        .slice(0, limit)
        .map((row) => recordOf(state, row))
    ),
  recipients: (organizationId, id, { status, limit, after }) =>
    Effect.sync(() => {
      if (owned(state, organizationId, id) === undefined) return []
      const rows: Array<BroadcastRecipient> = []
      const entries = liveRecipients(state, id).sort(([a], [b]) => (a < b ? -1 : 1))
      for (const [contactId, messageId] of entries) {
        if (after !== null && contactId <= after) continue
        const message = state.messages.get(messageId)
        const to = state.dispatch.get(messageId)?.to ?? state.contacts.get(contactId)?.phone
        if (message === undefined || to === undefined || (status !== null && message.status !== status)) continue
        rows.push({ contact_uuid: contactId, phone: to, message_uuid: messageId, status: message.status, failure: message.failure })
        if (rows.length >= limit) break
      }
      return rows
    }),
  countAudience: (organizationId, audience) => Effect.sync(() => audienceIds(state, organizationId, audience).length),
  audiencePage: (organizationId, audience, after, limit) =>
    Effect.sync(() =>
      audienceIds(state, organizationId, audience)
        .filter((id) => after === null || id > after)
        .slice(0, limit)
        .map((id) => contactOf(state, state.contacts.get(id)!))
    ),
  claimStart: ({ now, lease, leaseUntil }) =>
    Effect.sync(() => {
      const nowIso = new Date(now).toISOString()
      for (const row of state.broadcasts.values()) {
        const dueScheduled = row.status === "scheduled" && row.send_at !== null && row.send_at <= nowIso
        const resumable = row.status === "sending" && !row.start_finished && (row.start_lease_until === null || row.start_lease_until <= now)
        if (!dueScheduled && !resumable) continue
        const claimed: BroadcastRow = {
          ...row,
          status: "sending",
          started_at: row.started_at ?? nowIso,
          start_lease: lease,
          start_lease_until: leaseUntil
        }
        state.broadcasts.set(row.uuid, claimed)
        return Option.some({ organization_id: row.organization_id, broadcast: recordOf(state, claimed), lease, cursor: row.start_cursor })
      }
      return Option.none()
    }),
  nextStartDueAt: () =>
    Effect.sync(() => {
      // claimStart's two branches without their time bound.
      let earliest: number | null = null
      for (const row of state.broadcasts.values()) {
        const dueAt =
          row.status === "scheduled" && row.send_at !== null
            ? Date.parse(row.send_at)
            : row.status === "sending" && !row.start_finished
            ? (row.start_lease_until ?? 0)
            : null
        if (dueAt !== null && (earliest === null || dueAt < earliest)) earliest = dueAt
      }
      return earliest
    }),
  writeRecipients: (organizationId, id, lease, batch) =>
    Effect.sync(() => {
      const row = owned(state, organizationId, id)
      if (row === undefined || row.status !== "sending" || row.start_lease !== lease) return false
      const recipients = state.broadcastRecipients.get(id) ?? new Map<ContactId, MessageId>()
      state.broadcastRecipients.set(id, recipients)
      for (const recipient of batch.recipients) {
        if (recipients.has(recipient.contact_uuid)) continue
        const queued = recipient.message.status === "queued"
        const outcome = appendMessage(state, organizationId, {
          contact: { _tag: "ById", uuid: recipient.contact_uuid },
          newChat: { uuid: recipient.chat_uuid, status: "open" },
          message: recipient.message,
          unreadIncrement: 0,
          reopen: { from: [], to: "open" },
          dedupe: false,
          now: batch.now,
          ...(queued ? { outbox: { to: recipient.to, class: "broadcast", expires_at: recipient.expires_at, claim: null } } : {})
        })
        if (outcome._tag === "Appended") recipients.set(recipient.contact_uuid, recipient.message.uuid)
      }
      state.broadcasts.set(id, {
        ...row,
        start_cursor: batch.cursor,
        start_finished: batch.finished,
        start_lease: batch.finished ? null : lease,
        start_lease_until: batch.finished ? null : batch.leaseUntil
      })
      return true
    }),
  cancel: (organizationId, id, failure, now) =>
    Effect.sync(() => {
      const row = owned(state, organizationId, id)
      if (row === undefined) return { _tag: "NotFound" } as const
      const ended = end(state, organizationId, row, "cancelled", failure, now)
      return ended === undefined
        ? ({ _tag: "Refused", broadcast: recordOf(state, row) } as const)
        : ({ _tag: "Done", broadcast: recordOf(state, ended) } as const)
    }),
  sending: (organizationId) =>
    Effect.sync(() =>
      [...state.broadcasts.values()]
        .filter((row) => row.organization_id === organizationId && row.status === "sending")
        .sort((a, b) => (a.created_at === b.created_at ? (a.uuid < b.uuid ? -1 : 1) : a.created_at < b.created_at ? -1 : 1))
        .map((row) => recordOf(state, row))
    ),
  stop: (organizationId, id, reason, now) =>
    Effect.sync(() => {
      const row = owned(state, organizationId, id)
      const ended = row === undefined ? undefined : end(state, organizationId, row, "stopped", reason, now)
      return ended === undefined ? Option.none() : Option.some(recordOf(state, ended))
    }),
  completeFinished: (now) =>
    Effect.sync(() => {
      const completed: Array<Broadcast> = []
      for (const row of state.broadcasts.values()) {
        if (row.status !== "sending" || !row.start_finished || waiting(state, row.uuid)) continue
        const done: BroadcastRow = { ...row, status: "completed", completed_at: now }
        state.broadcasts.set(row.uuid, done)
        const record = recordOf(state, done)
        recordWebhookEvent(state, row.organization_id, "broadcast.completed", now, () => record)
        completed.push(record)
      }
      return completed
    })
})
