import { Effect, Option } from "effect"
import { type Channel, type ChannelId, type ChannelStatus, nextCooldownMs, pacingIntervalMs } from "../model/channels.js"
import { CHANNEL_REMOVED_FAILURE, listedMessageType, MESSAGE_STATUS_PREDECESSORS, type Message, type MessageFailure, type MessageId } from "../model/messages.js"
import type { OrganizationId } from "../model/organizations.js"
import type {
  ClaimedMessage,
  OutboxClaimRequest,
  OutboxOutcome,
  OutboxPlacement,
  OutboxRepository
} from "../storage/OutboxRepository.js"
import { withPromise } from "../internal/promiseForm.js"
import { foldBusinessReaction, withoutOrganization, writeStatus } from "./messages.js"
import type { DispatchRow, MemoryState, MessageRow, PacingRow } from "./state.js"
import { recordWebhookEvent } from "./webhooks.js"

// The send queue of the memory store (rules at the top of OutboxRepository.ts). Messages
// live in the chats' tables; their dispatch state in `MemoryState.dispatch`, channels'
// pacing state in `MemoryState.pacing`. Every function here runs inside a synchronous
// method, so each claim, record or move is one atomic step.

/** A message of the send queue with its dispatch state. */
interface Entry {
  readonly row: MessageRow
  readonly dispatch: DispatchRow
}

/** The dispatch state of a message that no dispatcher holds (`pair_rate_waits` back to 0). */
export const released = (dispatch: DispatchRow): DispatchRow => ({ ...dispatch, lease: null, lease_until: null, pair_rate_waits: 0 })

/** The pacing state of a channel: `pacing_tat` 0 and `cooldown_ms` 0 until it has one. */
const pacingOf = (state: MemoryState, channelId: string): PacingRow =>
  state.pacing.get(channelId as ChannelId) ?? { pacing_tat: 0, cooldown_ms: 0 }

/**
 * Whether a message still exists: its contact was not deleted (the chats repository
 * deletes the chats of deleted contacts with their messages only when it next sees them).
 */
const live = (state: MemoryState, row: MessageRow): boolean =>
  state.contacts.get(row.contact_uuid)?.organization_id === row.organization_id

/** The organization's live outbox message `id`, or `undefined`. */
const ownedEntry = (state: MemoryState, organizationId: OrganizationId, id: MessageId): Entry | undefined => {
  const row = state.messages.get(id)
  const dispatch = state.dispatch.get(id)
  if (row === undefined || dispatch === undefined || row.organization_id !== organizationId || !live(state, row)) return undefined
  return { row, dispatch }
}

/** Whether a status is a waiting one (`queued` or `sending`). */
const waiting = (row: MessageRow): boolean => row.status === "queued" || row.status === "sending"

/** Every live `scheduled` message of the send queue. */
const scheduledEntries = (state: MemoryState): Array<Entry> => {
  const entries: Array<Entry> = []
  for (const [id, dispatch] of state.dispatch) {
    const row = state.messages.get(id)
    if (row !== undefined && row.status === "scheduled" && live(state, row)) entries.push({ row, dispatch })
  }
  return entries
}

/**
 * The first step of a claim: every scheduled message due at `now` (epoch ms) becomes
 * `queued` with a fresh `sequence` (the tail of its lane), in `next_attempt_at` order.
 */
const promoteScheduled = (state: MemoryState, now: number): void => {
  const due = scheduledEntries(state)
    .filter(({ row }) => epochMs(row.next_attempt_at) <= now)
    .sort((a, b) => epochMs(a.row.next_attempt_at) - epochMs(b.row.next_attempt_at) || a.dispatch.sequence - b.dispatch.sequence)
  for (const { row, dispatch } of due) {
    state.outboxSequence += 1
    state.messages.set(row.uuid, { ...row, status: "queued" })
    state.dispatch.set(row.uuid, { ...dispatch, sequence: state.outboxSequence })
  }
}

/** Every live waiting message of the send queue. */
const waitingEntries = (state: MemoryState): Array<Entry> => {
  const entries: Array<Entry> = []
  for (const [id, dispatch] of state.dispatch) {
    const row = state.messages.get(id)
    if (row !== undefined && waiting(row) && live(state, row)) entries.push({ row, dispatch })
  }
  return entries
}

/** The lane of a message: (organization, channel or none, `to`, `class`). */
const laneOf = (organizationId: string, channelId: string | null, to: string, sendClass: string): string =>
  JSON.stringify([organizationId, channelId, to, sendClass])

const laneOfEntry = ({ row, dispatch }: Entry): string => laneOf(row.organization_id, row.channel_uuid, dispatch.to, dispatch.class)

/** The head of every lane that has a waiting message: its waiting message of lowest `sequence`. */
const heads = (state: MemoryState): Array<Entry> => {
  const byLane = new Map<string, Entry>()
  for (const entry of waitingEntries(state)) {
    const lane = laneOfEntry(entry)
    const head = byLane.get(lane)
    if (head === undefined || entry.dispatch.sequence < head.dispatch.sequence) byLane.set(lane, entry)
  }
  return [...byLane.values()]
}

/** Whether a channel lets its messages be sent: none, unknown, or `active`. */
const channelActive = (state: MemoryState, channelId: string | null): boolean =>
  channelId === null || state.channels.get(channelId as ChannelId)?.channel.status !== "paused"

/** Epoch ms of an ISO 8601 instant (`null` as 0: due at once). */
const epochMs = (iso: string | null): number => (iso === null ? 0 : Date.parse(iso))

const isoOf = (epoch: number): string => new Date(epoch).toISOString()

/**
 * `ChatRepository.appendMessage` with `outbox`: the created message (not yet stored) placed
 * in the send queue per `OutboxPlacement` — claimed at once or `queued` — with its
 * dispatch state written and, when claimed through a channel, its pacing slot reserved.
 * Returns the message to store.
 */
export const placeInOutbox = (state: MemoryState, created: MessageRow, placement: OutboxPlacement, now: string): MessageRow => {
  const nowMs = Date.parse(now)
  state.outboxSequence += 1
  const dispatch: DispatchRow = {
    to: placement.to,
    class: placement.class,
    expires_at: placement.expires_at,
    sequence: state.outboxSequence,
    pair_rate_waits: 0,
    lease: null,
    lease_until: null,
    scheduled_at: placement.notBefore ?? null
  }
  if (placement.notBefore !== undefined) {
    state.dispatch.set(created.uuid, dispatch)
    return { ...created, status: "scheduled", next_attempt_at: placement.notBefore }
  }
  const channelId = created.channel_uuid as ChannelId | null
  const stored = channelId === null ? undefined : state.channels.get(channelId)
  const pacing = stored === undefined ? undefined : pacingOf(state, stored.channel.uuid)
  const claim = placement.claim
  const free = () =>
    stored?.channel.status !== "paused" &&
    !waitingEntries(state).some((entry) => laneOfEntry(entry) === laneOf(created.organization_id, channelId, placement.to, placement.class)) &&
    (pacing === undefined || Math.max(pacing.pacing_tat, nowMs) === nowMs)
  if (claim !== null && (claim.bypass || free())) {
    if (!claim.bypass && stored !== undefined && pacing !== undefined) {
      state.pacing.set(stored.channel.uuid, { ...pacing, pacing_tat: nowMs + pacingIntervalMs(stored.channel.throughput_mps) })
    }
    state.dispatch.set(created.uuid, { ...dispatch, lease: claim.lease, lease_until: claim.leaseUntil })
    return { ...created, status: "sending", next_attempt_at: isoOf(claim.leaseUntil + claim.settleMs) }
  }
  state.dispatch.set(created.uuid, dispatch)
  const dueAt = claim === null || pacing === undefined ? now : isoOf(Math.max(pacing.pacing_tat, nowMs))
  return { ...created, status: "queued", next_attempt_at: dueAt }
}

/**
 * `ChannelRepository.delete`'s part in the send queue: the channel's waiting messages
 * become `failed` with `CHANNEL_REMOVED_FAILURE` at `now` (event `message.status_updated`
 * each, none for a reaction row: `listedMessageType`), and its pacing state goes.
 */
export const failChannelMessages = (state: MemoryState, organizationId: OrganizationId, channelId: ChannelId, now: string): void => {
  state.pacing.delete(channelId)
  // One pass over the send queue, collecting nothing (a channel may hold 100 000 waiting
  // messages); replacing an entry's value while iterating its map visits no entry twice.
  for (const [id, dispatch] of state.dispatch) {
    const row = state.messages.get(id)
    if (row === undefined || row.organization_id !== organizationId || row.channel_uuid !== channelId) continue
    if (!(waiting(row) || row.status === "scheduled") || !live(state, row)) continue
    const failed: MessageRow = { ...row, status: "failed", failure: CHANNEL_REMOVED_FAILURE, next_attempt_at: null, updated_at: now }
    state.messages.set(row.uuid, failed)
    state.dispatch.set(row.uuid, released(dispatch))
    if (listedMessageType(row.type)) {
      recordWebhookEvent(state, organizationId, "message.status_updated", now, () => withoutOrganization(failed))
    }
  }
}

/** Candidates of one channel in claim order: `single` first, then `next_attempt_at`, then `sequence`. */
const claimOrder = (a: Entry, b: Entry): number =>
  a.dispatch.class !== b.dispatch.class
    ? a.dispatch.class === "single" ? -1 : 1
    : epochMs(a.row.next_attempt_at) - epochMs(b.row.next_attempt_at) || a.dispatch.sequence - b.dispatch.sequence

/** `OutboxRepository.claim`, per the rules of its docstring. */
const claim = (state: MemoryState, request: OutboxClaimRequest): Array<ClaimedMessage> => {
  const { now } = request
  const nowIso = isoOf(now)
  promoteScheduled(state, now)
  const due = heads(state).filter(
    ({ row, dispatch }) =>
      channelActive(state, row.channel_uuid) &&
      epochMs(row.next_attempt_at) <= now &&
      (row.status === "queued" || (dispatch.lease_until !== null && dispatch.lease_until <= now))
  )
  const byChannel = new Map<string | null, Array<Entry>>()
  for (const entry of [...due].sort(claimOrder)) {
    byChannel.set(entry.row.channel_uuid, [...(byChannel.get(entry.row.channel_uuid) ?? []), entry])
  }
  const turns = [...byChannel].map(([channelId, candidates]) => {
    const stored = channelId === null ? undefined : state.channels.get(channelId as ChannelId)
    return {
      candidates,
      channel: stored?.channel,
      pacing: stored === undefined ? undefined : pacingOf(state, stored.channel.uuid)
    }
  })
  const taken: Array<{ readonly entry: Entry; readonly notBefore: number }> = []
  const expired = (entry: Entry) => entry.dispatch.expires_at <= nowIso
  let progress = true
  while (progress && taken.length < request.limit) {
    progress = false
    for (const turn of turns) {
      if (taken.length >= request.limit) break
      if (turn.candidates.length === 0) continue
      if (turn.channel === undefined || turn.pacing === undefined) {
        taken.push({ entry: turn.candidates.shift()!, notBefore: now })
        progress = true
        continue
      }
      const slot = Math.max(turn.pacing.pacing_tat, now)
      const index = slot <= now + request.horizonMs ? 0 : turn.candidates.findIndex(expired)
      if (index === -1) continue
      const [entry] = turn.candidates.splice(index, 1)
      if (expired(entry!)) taken.push({ entry: entry!, notBefore: now })
      else {
        taken.push({ entry: entry!, notBefore: slot })
        turn.pacing = { ...turn.pacing, pacing_tat: slot + pacingIntervalMs(turn.channel.throughput_mps) }
      }
      progress = true
    }
  }
  for (const turn of turns) if (turn.channel !== undefined && turn.pacing !== undefined) state.pacing.set(turn.channel.uuid, turn.pacing)
  const nextAttemptAt = isoOf(request.leaseUntil + request.settleMs)
  return taken.map(({ entry: { row, dispatch }, notBefore }) => {
    const claimed: MessageRow = { ...row, status: "sending", next_attempt_at: nextAttemptAt, updated_at: nowIso }
    const leased: DispatchRow = { ...dispatch, lease: request.lease, lease_until: request.leaseUntil }
    state.messages.set(row.uuid, claimed)
    state.dispatch.set(row.uuid, leased)
    return {
      organization_id: row.organization_id,
      message: withoutOrganization(claimed),
      lease: request.lease,
      to: leased.to,
      class: leased.class,
      expires_at: leased.expires_at,
      pair_rate_waits: leased.pair_rate_waits,
      not_before: notBefore,
      reclaimed: row.status === "sending",
      scheduled_at: leased.scheduled_at
    }
  })
}

/** Writes a channel's new record and announces its status change with `type`. */
const writeChannelStatus = (
  state: MemoryState,
  organizationId: OrganizationId,
  channel: Channel,
  type: "channel.paused" | "channel.resumed",
  now: string
): void => {
  const stored = state.channels.get(channel.uuid)!
  state.channels.set(channel.uuid, { ...stored, channel })
  recordWebhookEvent(state, organizationId, type, now, () => channel)
}

/** `OutboxRepository.record`, per the rules of `OutboxOutcome`. */
const record = (state: MemoryState, id: MessageId, lease: string, outcome: OutboxOutcome, now: string): Option.Option<Message> => {
  const row = state.messages.get(id)
  const dispatch = state.dispatch.get(id)
  if (row === undefined || dispatch === undefined || !live(state, row) || row.status !== "sending" || dispatch.lease !== lease) {
    return Option.none()
  }
  const organizationId = row.organization_id
  const nowMs = Date.parse(now)
  const stored = row.channel_uuid === null ? undefined : state.channels.get(row.channel_uuid as ChannelId)
  const write = (written: MessageRow, dispatchAfter: DispatchRow, event: boolean): Option.Option<Message> => {
    state.messages.set(id, written)
    state.dispatch.set(id, dispatchAfter)
    // A reaction row is never announced (its target's message.reactions_updated is).
    if (event && listedMessageType(written.type)) recordWebhookEvent(state, organizationId, "message.status_updated", now, () => withoutOrganization(written))
    return Option.some(withoutOrganization(written))
  }
  switch (outcome._tag) {
    case "Sent": {
      if (stored !== undefined) state.pacing.set(stored.channel.uuid, { ...pacingOf(state, stored.channel.uuid), cooldown_ms: 0 })
      const counted: MessageRow = { ...row, failure: null, attempts: row.attempts + outcome.attempts, updated_at: now }
      state.messages.set(id, counted)
      state.dispatch.set(id, released(dispatch))
      const written = writeStatus(state, organizationId, counted, {
        status: "sent",
        from: ["sending"],
        provider_message_id: outcome.provider_message_id ?? undefined,
        now
      })
      foldBusinessReaction(state, organizationId, written.message, now)
      return Option.some(written.message)
    }
    case "Failed":
      return write(
        { ...row, status: "failed", failure: outcome.failure, attempts: row.attempts + outcome.attempts, next_attempt_at: null, updated_at: now },
        released(dispatch),
        true
      )
    case "Requeued": {
      if (outcome.throttled && stored !== undefined) {
        const pacing = pacingOf(state, stored.channel.uuid)
        const cooldown = nextCooldownMs(pacing.cooldown_ms)
        state.pacing.set(stored.channel.uuid, { pacing_tat: Math.max(pacing.pacing_tat, nowMs + cooldown), cooldown_ms: cooldown })
      }
      return write(
        {
          ...row,
          status: "queued",
          failure: outcome.failure,
          attempts: row.attempts + outcome.attempts,
          next_attempt_at: outcome.next_attempt_at,
          updated_at: now
        },
        { ...released(dispatch), pair_rate_waits: outcome.pairRate ? dispatch.pair_rate_waits + 1 : 0 },
        outcome.attempts > 0
      )
    }
    case "Unknown":
      return write(
        { ...row, attempts: row.attempts + outcome.attempts, next_attempt_at: outcome.next_attempt_at, updated_at: now },
        { ...released(dispatch), lease_until: nowMs },
        false
      )
    case "Paused": {
      if (stored !== undefined && stored.channel.status === "active") {
        const channel: Channel = { ...stored.channel, status: "paused", paused_reason: outcome.reason, paused_at: now, updated_at: now }
        writeChannelStatus(state, stored.organization_id, channel, "channel.paused", now)
      }
      return write({ ...row, status: "queued", next_attempt_at: now, updated_at: now }, released(dispatch), false)
    }
  }
}

/**
 * `retry` and `cancel`: the organization's outbox message `id`, when its status is
 * `allowed`, becomes `moved(it)`; `eventAt`, when not `null`, is the time of the
 * `message.status_updated` event written with it.
 */
const move = (
  state: MemoryState,
  organizationId: OrganizationId,
  id: MessageId,
  allowed: ReadonlyArray<Message["status"]>,
  moved: (entry: Entry) => Entry,
  eventAt: string | null
) => {
  const entry = ownedEntry(state, organizationId, id)
  if (entry === undefined) return { _tag: "NotFound" } as const
  if (!allowed.includes(entry.row.status)) return { _tag: "Refused", message: withoutOrganization(entry.row) } as const
  const after = moved(entry)
  state.messages.set(id, after.row)
  state.dispatch.set(id, after.dispatch)
  if (eventAt !== null && listedMessageType(after.row.type)) {
    recordWebhookEvent(state, organizationId, "message.status_updated", eventAt, () => withoutOrganization(after.row))
  }
  return { _tag: "Done", message: withoutOrganization(after.row) } as const
}

/**
 * The send queue's repository of the memory store. Every method is synchronous, so each
 * is atomic: of claims running together each message goes to one.
 */
export const outboxRepository = (state: MemoryState): OutboxRepository => ({
  claim: (request) => Effect.sync(() => claim(state, request)),
  record: withPromise(
    (id, lease, outcome, now) => Effect.sync(() => record(state, id, lease, outcome, now)),
    (id, lease, outcome, now) => new Promise((resolve) => resolve(record(state, id, lease, outcome, now)))
  ),
  settle: (organizationId, id, settlement) =>
    Effect.sync(() => {
      const entry = ownedEntry(state, organizationId, id)
      if (entry === undefined) return Option.none()
      const outcome = writeStatus(state, organizationId, entry.row, {
        status: settlement.status,
        from: MESSAGE_STATUS_PREDECESSORS[settlement.status],
        failure: settlement.failure,
        provider_message_id: entry.row.provider_message_id === null ? settlement.provider_message_id : undefined,
        now: settlement.now
      })
      return Option.some({ message: outcome.message, changed: outcome.changed })
    }),
  retry: (organizationId, id, now, expiresAt) =>
    Effect.sync(() =>
      move(
        state,
        organizationId,
        id,
        ["failed"],
        ({ row, dispatch }) => ({
          row: { ...row, status: "queued", next_attempt_at: now, attempts: 0, failure: null, updated_at: now },
          dispatch: { ...released(dispatch), expires_at: expiresAt }
        }),
        null
      )
    ),
  cancel: (organizationId, id, failure: MessageFailure, now) =>
    Effect.sync(() =>
      move(
        state,
        organizationId,
        id,
        ["queued", "scheduled"],
        ({ row, dispatch }) => ({
          row: { ...row, status: "failed", failure, next_attempt_at: null, updated_at: now },
          dispatch: released(dispatch)
        }),
        now
      )
    ),
  nextDueAt: () =>
    Effect.sync(() => {
      let earliest: number | null = null
      for (const { row, dispatch } of heads(state)) {
        if (!channelActive(state, row.channel_uuid)) continue
        const leaseEnd = row.status === "sending" ? (dispatch.lease_until ?? 0) : 0
        const due = Math.max(epochMs(row.next_attempt_at), leaseEnd)
        if (earliest === null || due < earliest) earliest = due
      }
      for (const { row } of scheduledEntries(state)) {
        const due = epochMs(row.next_attempt_at)
        if (earliest === null || due < earliest) earliest = due
      }
      return earliest
    }),
  channelQueue: (organizationId, channelId) =>
    Effect.sync(() => {
      let queued = 0
      let sending = 0
      let oldest: string | null = null
      for (const { row } of [...waitingEntries(state), ...scheduledEntries(state)]) {
        if (row.organization_id !== organizationId || row.channel_uuid !== channelId) continue
        if (row.status === "sending") sending += 1
        else {
          queued += 1
          if (oldest === null || row.created_at < oldest) oldest = row.created_at
        }
      }
      return { queued, sending, oldest_queued_at: oldest }
    }),
  summary: () =>
    Effect.sync(() => {
      const rows = new Map<string | null, { channel_id: ChannelId | null; channel_status: ChannelStatus | null; queued: number; sending: number }>()
      for (const [channelId, stored] of state.channels) {
        if (stored.channel.status === "paused") rows.set(channelId, { channel_id: channelId, channel_status: "paused", queued: 0, sending: 0 })
      }
      for (const { row } of [...waitingEntries(state), ...scheduledEntries(state)]) {
        const channelId = row.channel_uuid as ChannelId | null
        const summary = rows.get(channelId) ?? {
          channel_id: channelId,
          channel_status: channelId === null ? null : (state.channels.get(channelId)?.channel.status ?? null),
          queued: 0,
          sending: 0
        }
        rows.set(channelId, summary)
        if (row.status === "sending") summary.sending += 1
        else summary.queued += 1
      }
      return [...rows.values()]
    }),
  resumeChannel: (organizationId, channelId, now) =>
    Effect.sync(() => {
      const stored = state.channels.get(channelId)
      if (stored === undefined || stored.organization_id !== organizationId) return Option.none()
      if (stored.channel.status === "active") return Option.some({ channel: stored.channel, changed: false })
      const channel: Channel = { ...stored.channel, status: "active", paused_reason: null, paused_at: null, updated_at: now }
      writeChannelStatus(state, organizationId, channel, "channel.resumed", now)
      for (const { row } of waitingEntries(state)) {
        if (row.organization_id === organizationId && row.channel_uuid === channelId && row.status === "queued") {
          state.messages.set(row.uuid, { ...row, next_attempt_at: now })
        }
      }
      return Option.some({ channel, changed: true })
    })
})
