import { type ClaimedMessage, type OutboxClaimRequest, pacingIntervalMs } from "@switchboard/core"
import { type CandidateRow, claimedMessage, claimOrder } from "@switchboard/storage-sql"
import type { Statements } from "../internal/sql.js"
import { decodeMessage, type MessageRow } from "./chatRows.js"
import { CLASSES, dueSql, iso, type PacingRow, pageSize, SQL } from "./outboxRows.js"

// The claim of the send queue (the rules of `OutboxRepository.claim`), in one transaction,
// and the plain reads that find whether anything is due and when.

/** The due heads of one channel (or of the messages without one), read a page at a time in claim order. */
interface Candidates {
  readonly peek: () => CandidateRow | undefined
  readonly next: () => CandidateRow | undefined
}

const candidatesOf = (
  statements: Statements,
  channelUuid: string | null,
  nowIso: string,
  nowMillis: number,
  firstPage: number
): Candidates => {
  let classIndex = 0
  let after: readonly [string, number] = ["", 0]
  let page: Array<CandidateRow> = []
  let size = firstPage
  let classDone = false
  const fill = (): void => {
    while (page.length === 0 && classIndex < CLASSES.length) {
      if (classDone) {
        classIndex += 1
        after = ["", 0]
        classDone = false
        size = firstPage
        continue
      }
      page = statements
        .prepare<CandidateRow>(dueSql(size))
        .all(channelUuid, CLASSES[classIndex], after[0], after[1], nowIso, nowMillis)
      classDone = page.length < size
      const last = page.at(-1)
      if (last !== undefined) after = [last.next_attempt_at!, last.sequence]
      size = pageSize(size * 2)
    }
  }
  return {
    peek: () => {
      fill()
      return page[0]
    },
    next: () => {
      fill()
      return page.shift()
    }
  }
}

/** One channel's part of a claim: its pacing (none for no channel or an unknown one), its next slot and its candidates. */
interface ChannelTurn {
  readonly channelUuid: string | null
  readonly intervalMs: number | null
  slot: number
  reserved: boolean
  readonly candidates: Candidates
}

/**
 * The first step of a claim: every scheduled message due at `nowIso` becomes `queued` with a
 * fresh sequence, in `next_attempt_at` order (the tail of its lane).
 */
const promoteScheduled = (statements: Statements, nowIso: string): void => {
  const due = statements.prepare<string>(SQL.scheduledDue).pluck().all(nowIso)
  for (const uuid of due) {
    const { sequence } = statements.prepare<{ sequence: number }>(SQL.nextSequence).get()!
    statements.prepare(SQL.promote).run(sequence, uuid)
  }
}

/** The body of `claim`, inside its transaction (the rules of `OutboxRepository.claim`). */
export const claimDue = (statements: Statements, request: OutboxClaimRequest): Array<ClaimedMessage> => {
  const { now, limit } = request
  const nowIso = iso(now)
  promoteScheduled(statements, nowIso)
  const channels: Array<string | null> = [
    ...statements.prepare<string>(SQL.channelsWaiting).pluck().all(),
    null
  ]
  const firstPage = pageSize(Math.ceil(limit / channels.length))
  const turns: Array<ChannelTurn> = []
  for (const channelUuid of channels) {
    const pacing = channelUuid === null ? undefined : statements.prepare<PacingRow>(SQL.pacing).get(channelUuid)
    if (pacing?.status === "paused") continue
    const candidates = candidatesOf(statements, channelUuid, nowIso, now, firstPage)
    if (candidates.peek() === undefined) continue
    turns.push({
      channelUuid,
      intervalMs: pacing === undefined ? null : pacingIntervalMs(pacing.throughput_mps),
      slot: pacing === undefined ? now : Math.max(pacing.pacing_tat, now),
      reserved: false,
      candidates
    })
  }
  // The channel whose first due head comes first in claim order takes the first turn.
  turns.sort((a, b) => claimOrder(a.candidates.peek()!, b.candidates.peek()!))
  const claimed: Array<ClaimedMessage> = []
  let active = turns
  while (claimed.length < limit && active.length > 0) {
    const still: Array<ChannelTurn> = []
    for (const turn of active) {
      if (claimed.length >= limit) {
        still.push(turn)
        continue
      }
      // No pacing slot left within the horizon: only expired messages, which take none.
      const row =
        turn.intervalMs !== null && turn.slot > now + request.horizonMs
          ? statements.prepare<CandidateRow>(SQL.expiredDue).get(turn.channelUuid, nowIso, nowIso, now)
          : turn.candidates.next()
      if (row === undefined) continue
      let notBefore = now
      if (turn.intervalMs !== null && row.expires_at > nowIso) {
        notBefore = turn.slot
        turn.slot += turn.intervalMs
        turn.reserved = true
      }
      claimed.push(claimOne(statements, row, request, notBefore))
      still.push(turn)
    }
    active = still
  }
  for (const turn of turns) {
    if (turn.reserved) statements.prepare(SQL.reservePacing).run(turn.slot, turn.channelUuid)
  }
  return claimed
}

/** Leases one due head to the claim: `sending` until `leaseUntil`, due again after the settle time. */
const claimOne = (
  statements: Statements,
  row: CandidateRow,
  request: OutboxClaimRequest,
  notBefore: number
): ClaimedMessage => {
  const after = statements
    .prepare<MessageRow>(SQL.lease)
    .get(request.lease, request.leaseUntil, iso(request.leaseUntil + request.settleMs), iso(request.now), row.uuid)!
  return claimedMessage(row, decodeMessage(after), request, notBefore)
}

/**
 * Whether any channel not paused (or no channel) has a due head at `now` (epoch ms), by
 * plain reads: one probe of `messages_send_queue_due` per channel with waiting messages and
 * class. Run inside a snapshot.
 */
export const anyDue = (statements: Statements, now: number): boolean => {
  const nowIso = iso(now)
  if (statements.prepare(SQL.anyScheduledDue).get(nowIso) !== undefined) return true
  const channels = [...statements.prepare<string>(SQL.channelsWaiting).pluck().all(), null]
  return channels.some((channelUuid) => {
    if (channelUuid !== null && statements.prepare<PacingRow>(SQL.pacing).get(channelUuid)?.status === "paused") return false
    return CLASSES.some(
      (sendClass) => statements.prepare(dueSql(1)).get(channelUuid, sendClass, "", 0, nowIso, now) !== undefined
    )
  })
}

/**
 * The earliest time (epoch ms) a waiting head of an active channel (or without one) is due,
 * or `null`: per channel and class, the heads read soonest due first until one cannot beat
 * the best found (a `sending` head is due at the later of `next_attempt_at` and `lease_until`);
 * and the soonest scheduled message (any channel).
 */
export const nextDue = (statements: Statements): number | null => {
  const scheduled = statements.prepare<string | null>(SQL.nextScheduled).pluck().get()
  let best: number | null = scheduled === null || scheduled === undefined ? null : Date.parse(scheduled)
  const channels = [...statements.prepare<string>(SQL.channelsWaiting).pluck().all(), null]
  for (const channelUuid of channels) {
    if (channelUuid !== null && statements.prepare<PacingRow>(SQL.pacing).get(channelUuid)?.status === "paused") continue
    for (const sendClass of CLASSES) {
      const heads = statements
        .prepare<{ status: string; next_attempt_at: string; lease_until: number | null }>(SQL.heads)
        .iterate(channelUuid, sendClass)
      for (const head of heads) {
        const nextMillis = Date.parse(head.next_attempt_at)
        if (best !== null && nextMillis >= best) break
        const due = head.status === "sending" ? Math.max(nextMillis, head.lease_until ?? nextMillis) : nextMillis
        if (best === null || due < best) best = due
      }
    }
  }
  return best
}
