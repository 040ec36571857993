import { Option } from "effect"
import {
  CHANNEL_REMOVED_FAILURE,
  type ChannelId,
  type ChannelQueueFigures,
  type ChannelStatus,
  type ClaimedMessage,
  DEFAULT_THROUGHPUT_MPS,
  type Message,
  type MessageFailure,
  MESSAGE_STATUS_PREDECESSORS,
  type MessageStatus,
  nextCooldownMs,
  type OrganizationId,
  type OutboxClaimRequest,
  type OutboxMoveOutcome,
  type OutboxOutcome,
  type OutboxPlacement,
  type OutboxRepository,
  type OutboxSummaryRow,
  listedMessageType,
  outboundReactionOf,
  pacingIntervalMs,
  type WebhookEventType,
  withPromise
} from "@switchboard/core"
import type { Document } from "mongodb"
import type { ChannelDocument, MessageDocument } from "../internal/documents.js"
import { attempt, attemptPromise, onDuplicateKey } from "../internal/driver.js"
import { anyOf, eq, ofOrganization, owned } from "../internal/queries.js"
import { channelOf, messageRecord } from "../internal/records.js"
import { type Collections, WAITING } from "../internal/schema.js"
import { foldReaction } from "./chats.js"
import { applyPending, chatExists, ENDED_LEASE, writeStatus } from "./statusWrites.js"
import { pendingEvent, subscribersOf } from "./webhooks.js"

/** The statuses of a message waiting in the send queue. */
const WAITING_STATUSES: ReadonlyArray<MessageStatus> = ["queued", "sending"]

/** The statuses a cancel, a deleted channel and the queue figures treat as queued: waiting, or `scheduled`. */
const QUEUED_OR_SCHEDULED: ReadonlyArray<MessageStatus> = ["queued", "sending", "scheduled"]

/** The statuses the queue figures count as queued. */
const QUEUED_FIGURES: ReadonlyArray<MessageStatus> = ["queued", "scheduled"]

/** The `counters` document handing out every message's `sequence`. */
const SEQUENCE_COUNTER = "message_sequence"

/** How many times a compare-and-set write is retried when another write came first. */
const CAS_ATTEMPTS = 10

/** How many due messages one claim reads per channel at most, looking for heads. */
const HEAD_SCAN_LIMIT = 1_000

/** How many due messages one read of that scan takes. */
const HEAD_SCAN_PAGE = 100

/** The most rounds one claim runs when other processes keep taking its planned messages first. */
const CLAIM_ROUNDS = 50

/** The claim order of a channel's due messages: `single` before `broadcast`, then `next_attempt_at`, then `sequence`. */
const CLAIM_ORDER = { class: -1, next_attempt_at: 1, sequence: 1 } as const

/** ISO 8601 (`Date#toISOString`) of an epoch-ms time. */
const isoOf = (ms: number): string => new Date(ms).toISOString()

/** A filter matching a field that holds `value`, or that is absent when `value` is `undefined`. */
const sameAs = (value: unknown): Document => (value === undefined ? { $exists: false } : eq(value))

/** The waiting messages of the lane of `document`. */
const laneOf = (document: Pick<MessageDocument, "organization_id" | "channel_uuid" | "to" | "class">): Document => ({
  ...WAITING,
  organization_id: eq(document.organization_id),
  channel_uuid: eq(document.channel_uuid ?? null),
  to: eq(document.to),
  class: eq(document.class),
  status: anyOf(WAITING_STATUSES)
})

/** The DUE messages at `now` (epoch ms), heads or not: waiting, due, `queued` or `sending` with its lease ended. */
const dueAt = (now: number): Document => ({
  ...WAITING,
  next_attempt_at: { $type: "string", $lte: isoOf(now) },
  $or: [{ status: eq("queued") }, { status: eq("sending"), lease_until: { $lte: now } }]
})

/** Whether `document` is the head of its lane: no waiting message of the lane has a lower `sequence`. */
const isHead = async (collections: Collections, document: MessageDocument): Promise<boolean> =>
  (await collections.messages.countDocuments({ ...laneOf(document), sequence: { $lt: document.sequence } }, { limit: 1 })) === 0

/** The next number of the store's message sequence (one `findOneAndUpdate` `$inc`, upserted). */
const nextSequence = async (collections: Collections): Promise<number> => {
  const increment = () =>
    collections.counters.findOneAndUpdate({ _id: eq(SEQUENCE_COUNTER) }, { $inc: { value: 1 } }, { upsert: true, returnDocument: "after" })
  // Two first increments at once: one upsert inserts, the other fails on `_id` and increments again.
  const counter = await onDuplicateKey(increment, increment)
  if (counter === null) throw new Error("the message sequence counter vanished while it was incremented")
  return counter.value
}

/** Adds a webhook event of `type` with `data` to the document `id` of `collection`, when the organization has subscribers. */
const pushEvent = async (
  collections: Collections,
  collection: "messages" | "channels",
  organizationId: string,
  id: string,
  type: WebhookEventType,
  now: string,
  data: unknown
) => {
  const endpoints = (await subscribersOf(collections, organizationId))(type)
  if (endpoints.length === 0) return
  const target = collections[collection] as unknown as Collections["messages"]
  await target.updateOne({ _id: eq(id) }, { $push: { pending_events: pendingEvent(type, now, endpoints, data) } })
}

/** The `message.status_updated` event of a message as stored after a write; none for a reaction row (its target's `message.reactions_updated` is written instead). */
const pushStatusEvent = async (collections: Collections, document: MessageDocument, now: string) => {
  if (!listedMessageType(document.type)) return
  await pushEvent(collections, "messages", document.organization_id, document._id, "message.status_updated", now, messageRecord(document))
}

/**
 * The dispatch state and the record of a new message of the send queue, created by
 * `chats.appendMessage` with `placement` (core's `OutboxPlacement`): it takes the next
 * `sequence`, then — for a claim that may happen at once — checks the channel (`active`,
 * slot at `now` itself) and the lane (no other waiting message), and reserves the slot
 * with a compare-and-set on the channel's `pacing_tat`. Without a transaction, two
 * messages of one lane created together by two processes may both find the lane empty and
 * both be claimed: they go out together, in no defined order (as their requests came).
 */
export const placeInOutbox = async (
  collections: Collections,
  organizationId: string,
  message: Message,
  placement: OutboxPlacement,
  now: string
): Promise<{ readonly message: Message; readonly dispatch: Partial<MessageDocument> }> => {
  const sequence = await nextSequence(collections)
  const dispatch = { to: placement.to, class: placement.class, expires_at: placement.expires_at, sequence, pair_rate_waits: 0 }
  const queued = (at: string) => ({
    message: { ...message, status: "queued" as const, next_attempt_at: at, updated_at: now },
    dispatch: { ...dispatch, lease: null, lease_until: null }
  })
  if (placement.notBefore !== undefined) {
    // Scheduled: in no lane until a claim promotes it (`promoteScheduled`).
    return {
      message: { ...message, status: "scheduled" as const, next_attempt_at: placement.notBefore, updated_at: now },
      dispatch: { ...dispatch, lease: null, lease_until: null, scheduled_at: placement.notBefore }
    }
  }
  const claim = placement.claim
  if (claim === null) return queued(now)
  const claimed = {
    message: { ...message, status: "sending" as const, next_attempt_at: isoOf(claim.leaseUntil + claim.settleMs), updated_at: now },
    dispatch: { ...dispatch, lease: claim.lease, lease_until: claim.leaseUntil }
  }
  if (claim.bypass) return claimed
  const nowMs = Date.parse(now)
  const lane = laneOf({ organization_id: organizationId, channel_uuid: message.channel_uuid, to: placement.to, class: placement.class })
  const laneTaken = async () => (await collections.messages.countDocuments(lane, { limit: 1 })) > 0
  if (message.channel_uuid === null) return (await laneTaken()) ? queued(now) : claimed
  for (let round = 0; round < CAS_ATTEMPTS; round++) {
    const channel = await collections.channels.findOne({ _id: eq(message.channel_uuid) })
    if (channel === null) return (await laneTaken()) ? queued(now) : claimed
    const slot = Math.max(channel.pacing_tat ?? 0, nowMs)
    if (channel.status === "paused" || slot !== nowMs || (await laneTaken())) return queued(isoOf(slot))
    const reserved = await collections.channels.updateOne(
      { _id: eq(channel._id), status: { $ne: "paused" }, pacing_tat: sameAs(channel.pacing_tat) },
      { $set: { pacing_tat: nowMs + pacingIntervalMs(channel.throughput_mps ?? DEFAULT_THROUGHPUT_MPS) } }
    )
    if (reserved.matchedCount > 0) return claimed
  }
  throw new Error("chats.appendMessage: the channel's pacing kept changing concurrently")
}

/** The update failing a waiting send-queue message with `failure` at `now` (ISO 8601): no retry, its lease ended. */
const failedUpdate = (failure: MessageFailure, now: string) =>
  ({ $set: { status: "failed", failure, next_attempt_at: null, ...ENDED_LEASE, updated_at: now } }) as const

/**
 * Fails the organization's waiting send-queue messages of channel `channelId` (deleted)
 * with `CHANNEL_REMOVED_FAILURE` ({@link failWaitingMessages}).
 */
export const failChannelMessages = (collections: Collections, organizationId: string, channelId: string, now: string) =>
  failWaitingMessages(
    collections,
    organizationId,
    { ...WAITING, ...ofOrganization(organizationId), channel_uuid: eq(channelId), status: anyOf(QUEUED_OR_SCHEDULED) },
    CHANNEL_REMOVED_FAILURE,
    now
  )

/**
 * Fails the organization's send-queue messages matching `filter` (a filter of waiting
 * messages of the organization: it carries {@link WAITING} and their statuses) with
 * `failure` at `now` (ISO 8601), their dispatch state ended as `cancel` ends it, each with
 * its `message.status_updated` event: one `updateMany` when the organization has no
 * subscriber; else, batch after batch of {@link FAIL_BATCH} ids read, one `findOneAndUpdate`
 * guarded by `filter` per message, then its event (a crash between loses that event).
 */
export const failWaitingMessages = async (collections: Collections, organizationId: string, filter: Document, failure: MessageFailure, now: string) => {
  const failed = failedUpdate(failure, now)
  if ((await subscribersOf(collections, organizationId))("message.status_updated").length === 0) {
    await collections.messages.updateMany(filter, failed)
    return
  }
  // Batches of FAIL_BATCH ids: a failed message leaves `filter`, so each read finds the next
  // ones, and memory holds one batch however many wait (a cancel of 100 000 recipients read
  // every id at once). One that left `filter` meanwhile (claimed, sent) is neither failed
  // nor read again; the loop ends on an empty read.
  for (;;) {
    const waiting = await collections.messages.find(filter, { projection: { _id: 1 }, limit: FAIL_BATCH }).toArray()
    if (waiting.length === 0) return
    for (const { _id } of waiting) {
      const document = await collections.messages.findOneAndUpdate({ ...filter, _id: eq(_id) }, failed, { returnDocument: "after" })
      if (document !== null) await pushStatusEvent(collections, document, now)
    }
  }
}

/** How many waiting messages {@link failWaitingMessages} reads at a time when each needs its event. */
const FAIL_BATCH = 1_000

/** One channel's turn in a claim: its due heads in claim order and its pacing (none without a channel row). */
interface ChannelTurn {
  readonly channel: ChannelDocument | undefined
  readonly heads: Array<MessageDocument>
  next: number
  slot: number
  readonly interval: number
  readonly picks: Array<ClaimPick>
}

/** A head a claim means to take: its slot index among its channel's reserved slots (`null`: no slot). */
interface ClaimPick {
  readonly turn: ChannelTurn
  readonly document: MessageDocument
  readonly slotIndex: number | null
  notBefore: number | undefined
}

/**
 * `Storage.outbox` on MongoDB, without multi-document transactions (docs/storage.md "The
 * send queue without transactions"). Each message's dispatch state lives in its document (documents.ts); a
 * lane's head is found, not kept: the waiting message of lowest `sequence` of its lane
 * (index `messages_waiting_by_lane`, sorted, limit 1), so no crash can leave a head to
 * repair.
 *
 * A CLAIM reads the channels that have due messages (one `$group` over
 * `messages_waiting_due`), each channel's due heads in claim order, then plans the
 * round-robin: slots from the channel's `pacing_tat`, an expired head without one. It then
 * reserves each channel's slots with one compare-and-set on its `pacing_tat` (the value
 * read in the filter; another process came first: read again and reserve what is left),
 * and takes each message with one `findOneAndUpdate` filtered on its uuid, its status and
 * lease as read and still due, so of two processes only one gets it. When another process
 * took a planned message first, the channel's next head left over by the plan takes its
 * slot; with none left, the slot is wasted (pacing never exceeds the rate, it may fall a
 * little below) and the claim runs another round for the rest of its limit. A crash between the reservation and the message writes wastes
 * those slots the same way; a crash after leaves the message `sending` until its lease
 * ends, when it is claimed again (`reclaimed`).
 *
 * `record`, `retry` and `cancel` are one `findOneAndUpdate` guarded by lease token and
 * status; their webhook event, the channel's cool-down, pause and cool-down reset, and the
 * pending provider reports of `Sent` are separate writes right after (a crash between
 * loses them: the message is right, the event or the channel change is not written).
 * `settle` is `chats.updateMessageStatus`'s compare-and-set with its event in the same
 * write. `resumeChannel` sets the channel `active` (one `findOneAndUpdate` guarded by
 * `paused`), then writes its `channel.resumed` event, then makes its queued messages due
 * (a crash between loses the event, or leaves the messages due at the time they had).
 *
 * @category repositories
 */
export const outboxRepository = (collections: Collections): OutboxRepository => {
  const { channels, messages } = collections

  /** The due heads of one channel (`null`: messages without a channel), in claim order, at most `limit`. */
  const dueHeads = async (due: Document, channelId: string | null, limit: number): Promise<Array<MessageDocument>> => {
    const heads: Array<MessageDocument> = []
    for (let skip = 0; skip < HEAD_SCAN_LIMIT && heads.length < limit; skip += HEAD_SCAN_PAGE) {
      const page = await messages.find({ ...due, channel_uuid: eq(channelId) }, { sort: CLAIM_ORDER, skip, limit: HEAD_SCAN_PAGE }).toArray()
      for (const document of page) if (heads.length < limit && (await isHead(collections, document))) heads.push(document)
      if (page.length < HEAD_SCAN_PAGE) break
    }
    return heads
  }

  /**
   * Reserves `turn`'s planned slots with a compare-and-set on the channel's `pacing_tat`;
   * when another process moved it, reads it again and reserves the slots still within
   * the horizon. Sets each slot pick's `notBefore`; picks left without a slot keep
   * `undefined` (not taken). A channel paused meanwhile gives nothing.
   */
  const reserveSlots = async (turn: ChannelTurn, request: OutboxClaimRequest) => {
    const wanted = turn.picks.filter((pick) => pick.slotIndex !== null).length
    let channel = turn.channel
    for (let round = 0; channel !== undefined && round < CAS_ATTEMPTS; round++) {
      if (channel.status === "paused") break
      const slots: Array<number> = []
      let slot = Math.max(channel.pacing_tat ?? 0, request.now)
      while (slots.length < wanted && slot <= request.now + request.horizonMs) {
        slots.push(slot)
        slot = slot + turn.interval
      }
      if (slots.length === 0) break
      const reserved = await channels.updateOne(
        { _id: eq(channel._id), status: { $ne: "paused" }, pacing_tat: sameAs(channel.pacing_tat) },
        { $set: { pacing_tat: slot } }
      )
      if (reserved.matchedCount > 0) {
        for (const pick of turn.picks) if (pick.slotIndex !== null) pick.notBefore = slots[pick.slotIndex]
        return
      }
      channel = (await channels.findOne({ _id: eq(channel._id) })) ?? undefined
    }
    if (channel?.status === "paused") for (const pick of turn.picks) pick.notBefore = undefined
  }

  /**
   * Takes the due message `before` (as read) for the claim: one `findOneAndUpdate` on its
   * uuid, its status and lease as read and still due; `undefined` when another process
   * took it first.
   */
  const take = async (before: MessageDocument, notBefore: number, request: OutboxClaimRequest): Promise<ClaimedMessage | undefined> => {
    const after = await messages.findOneAndUpdate(
      { ...dueAt(request.now), _id: eq(before._id), status: eq(before.status), lease: eq(before.lease ?? null) },
      {
        $set: {
          status: "sending",
          lease: request.lease,
          lease_until: request.leaseUntil,
          next_attempt_at: isoOf(request.leaseUntil + request.settleMs),
          updated_at: isoOf(request.now)
        }
      },
      { returnDocument: "after" }
    )
    if (after === null) return undefined
    return {
      organization_id: after.organization_id as OrganizationId,
      message: messageRecord(after),
      lease: request.lease,
      to: after.to!,
      class: after.class!,
      expires_at: after.expires_at!,
      pair_rate_waits: after.pair_rate_waits ?? 0,
      not_before: notBefore,
      reclaimed: before.status === "sending",
      scheduled_at: after.scheduled_at ?? null
    }
  }

  /**
   * The first step of a claim: each scheduled message due at `now` (epoch ms) becomes
   * `queued` with a fresh `sequence`, in `next_attempt_at` order (the tail of its lane);
   * each by a compare-and-set on `scheduled`, so of two processes one promotes it.
   */
  const promoteScheduled = async (now: number): Promise<void> => {
    const due = await messages
      .find({ ...WAITING, status: eq("scheduled"), next_attempt_at: { $type: "string", $lte: isoOf(now) } }, {
        sort: { next_attempt_at: 1, sequence: 1 },
        projection: { _id: 1 }
      })
      .toArray()
    for (const { _id } of due) {
      const sequence = await nextSequence(collections)
      await messages.updateOne({ _id: eq(_id), status: eq("scheduled") }, { $set: { status: "queued", sequence } })
    }
  }

  /**
   * Claims messages while other processes claim too: rounds of {@link claimRound}, each for
   * what is still wanted, until the limit is reached or a round lost no message to another
   * process (then nothing due is left for it). Every lost message went to another claim, so
   * the rounds end.
   */
  const claim = async (request: OutboxClaimRequest): Promise<ReadonlyArray<ClaimedMessage>> => {
    const claimed: Array<ClaimedMessage> = []
    await promoteScheduled(request.now)
    for (let round = 0; round < CLAIM_ROUNDS && claimed.length < request.limit; round++) {
      const result = await claimRound({ ...request, limit: request.limit - claimed.length })
      claimed.push(...result.claimed)
      if (result.lost === 0) break
    }
    return claimed
  }

  /**
   * One round of a claim: reads the due heads, plans the round-robin and its slots,
   * reserves the slots, takes the messages. Returns them and how many planned or left-over
   * heads another process took first.
   */
  const claimRound = async (request: OutboxClaimRequest): Promise<{ readonly claimed: Array<ClaimedMessage>; readonly lost: number }> => {
    const due = dueAt(request.now)
    const nowIso = isoOf(request.now)
    const groups = await messages.aggregate<{ _id: string | null }>([{ $match: due }, { $group: { _id: "$channel_uuid" } }]).toArray()
    const channelIds = groups.map((group) => group._id).filter((id): id is string => typeof id === "string")
    const rows = channelIds.length === 0 ? [] : await channels.find({ _id: anyOf(channelIds) }).toArray()
    const channelRows = new Map(rows.map((row) => [row._id, row]))
    const turns: Array<ChannelTurn> = []
    for (const group of groups) {
      const channel = group._id === null ? undefined : channelRows.get(group._id)
      if (channel?.status === "paused") continue
      // Twice the limit: heads beyond the plan replace planned ones another process takes first.
      const heads = await dueHeads(due, group._id ?? null, 2 * request.limit)
      if (heads.length === 0) continue
      turns.push({
        channel,
        heads,
        next: 0,
        slot: channel === undefined ? request.now : Math.max(channel.pacing_tat ?? 0, request.now),
        interval: channel === undefined ? 0 : pacingIntervalMs(channel.throughput_mps ?? DEFAULT_THROUGHPUT_MPS),
        picks: []
      })
    }
    // Channels take turns in the order of their first head, so the plan is the same for any process.
    turns.sort((a, b) => compareClaimOrder(a.heads[0]!, b.heads[0]!))
    // The plan: one head per channel per turn; a paced channel's head needs a slot within
    // the horizon unless it has expired; an unpaced one (no channel row) never does.
    const plan: Array<ClaimPick> = []
    for (let progress = true; progress && plan.length < request.limit; ) {
      progress = false
      for (const turn of turns) {
        if (plan.length >= request.limit) break
        while (turn.next < turn.heads.length) {
          const document = turn.heads[turn.next++]!
          const expired = document.expires_at! <= nowIso
          if (turn.channel === undefined || expired) {
            plan.push({ turn, document, slotIndex: null, notBefore: request.now })
          } else if (turn.slot <= request.now + request.horizonMs) {
            const slotIndex = turn.picks.filter((pick) => pick.slotIndex !== null).length
            plan.push({ turn, document, slotIndex, notBefore: undefined })
            turn.slot = turn.slot + turn.interval
          } else continue // no slot left: only expired heads may still be taken
          turn.picks.push(plan[plan.length - 1]!)
          progress = true
          break
        }
      }
    }
    for (const turn of turns) if (turn.channel !== undefined && turn.picks.length > 0) await reserveSlots(turn, request)
    const claimed: Array<ClaimedMessage> = []
    let lost = 0
    for (const pick of plan) {
      if (pick.notBefore === undefined) continue
      // Another process may have taken a head first: the channel's next head the plan left
      // over takes its place (and its slot), so concurrent claims waste few slots. A pick
      // without a slot (an expired head of a paced channel) takes only an expired head.
      const { turn } = pick
      for (let candidate: MessageDocument | undefined = pick.document; candidate !== undefined; candidate = leftOver(turn, pick, nowIso)) {
        const taken = await take(candidate, candidate.expires_at! <= nowIso ? request.now : pick.notBefore, request)
        if (taken !== undefined) {
          claimed.push(taken)
          break
        }
        lost++
      }
    }
    return { claimed, lost }
  }

  /** Pauses the channel when it is active, with its `channel.paused` event (a second write). */
  const pauseChannel = async (channelId: string, reason: MessageFailure, now: string) => {
    const channel = await channels.findOneAndUpdate(
      { _id: eq(channelId), status: { $ne: "paused" } },
      { $set: { status: "paused", paused_reason: { code: reason.code, title: reason.title }, paused_at: now, updated_at: now } },
      { returnDocument: "after" }
    )
    if (channel !== null) await pushEvent(collections, "channels", channel.organization_id, channel._id, "channel.paused", now, channelOf(channel))
  }

  /** The channel's cool-down after a throttle: `cooldown_ms` by `nextCooldownMs`, `pacing_tat` pushed past it (compare-and-set). */
  const coolDown = async (channelId: string, nowMs: number) => {
    for (let round = 0; round < CAS_ATTEMPTS; round++) {
      const channel = await channels.findOne({ _id: eq(channelId) }, { projection: { pacing_tat: 1, cooldown_ms: 1 } })
      if (channel === null) return
      const cooldown = nextCooldownMs(channel.cooldown_ms ?? 0)
      const result = await channels.updateOne(
        { _id: eq(channelId), pacing_tat: sameAs(channel.pacing_tat), cooldown_ms: sameAs(channel.cooldown_ms) },
        { $set: { cooldown_ms: cooldown, pacing_tat: Math.max(channel.pacing_tat ?? 0, nowMs + cooldown) } }
      )
      if (result.matchedCount > 0) return
    }
    throw new Error("outbox.record: the channel's pacing kept changing concurrently")
  }

  /** The update of `record` for each outcome (every one sets `updated_at`; `attempts` added). */
  const outcomeUpdate = (outcome: OutboxOutcome, now: string): Document => {
    const ended = { lease: null, lease_until: null, updated_at: now }
    switch (outcome._tag) {
      case "Sent":
        return {
          $set: {
            ...ended,
            status: "sent",
            ...(outcome.provider_message_id === null ? {} : { provider_message_id: outcome.provider_message_id }),
            failure: null,
            next_attempt_at: null,
            pair_rate_waits: 0
          },
          $inc: { attempts: outcome.attempts }
        }
      case "Failed":
        return {
          $set: { ...ended, status: "failed", failure: outcome.failure, next_attempt_at: null, pair_rate_waits: 0 },
          $inc: { attempts: outcome.attempts }
        }
      case "Requeued":
        return {
          $set: {
            ...ended,
            status: "queued",
            next_attempt_at: outcome.next_attempt_at,
            failure: outcome.failure,
            ...(outcome.pairRate ? {} : { pair_rate_waits: 0 })
          },
          $inc: { attempts: outcome.attempts, ...(outcome.pairRate ? { pair_rate_waits: 1 } : {}) }
        }
      case "Unknown":
        return {
          $set: { lease: null, lease_until: Date.parse(now), next_attempt_at: outcome.next_attempt_at, pair_rate_waits: 0, updated_at: now },
          $inc: { attempts: outcome.attempts }
        }
      case "Paused":
        return { $set: { ...ended, status: "queued", next_attempt_at: now, pair_rate_waits: 0 } }
    }
  }

  const record = async (id: string, lease: string, outcome: OutboxOutcome, now: string): Promise<Option.Option<Message>> => {
    const document = await messages.findOneAndUpdate(
      { _id: eq(id), to: { $exists: true }, status: eq("sending"), lease: eq(lease) },
      outcomeUpdate(outcome, now),
      { returnDocument: "after" }
    )
    if (document === null) return Option.none()
    const organizationId = document.organization_id
    const channelId = document.channel_uuid ?? null
    let message = messageRecord(document)
    switch (outcome._tag) {
      case "Sent":
        await pushStatusEvent(collections, document, now)
        if (channelId !== null) await channels.updateOne({ _id: eq(channelId), cooldown_ms: { $gt: 0 } }, { $set: { cooldown_ms: 0 } })
        if (outcome.provider_message_id !== null) {
          const applied = await applyPending(collections, organizationId, outcome.provider_message_id, now, { _tag: "Updated", message, changed: true })
          if (applied._tag === "Updated") message = applied.message
        }
        {
          // A business reaction shows on its target in the same step.
          const reaction = outboundReactionOf(message)
          if (reaction !== undefined) {
            const endpoints = (await subscribersOf(collections, organizationId))("message.reactions_updated")
            await foldReaction(collections, organizationId, endpoints, "business", { message_id: reaction.message_id, emoji: reaction.emoji, at: now }, now)
          }
        }
        break
      case "Failed":
        await pushStatusEvent(collections, document, now)
        break
      case "Requeued":
        if (outcome.attempts > 0) await pushStatusEvent(collections, document, now)
        if (outcome.throttled && channelId !== null) await coolDown(channelId, Date.parse(now))
        break
      case "Paused":
        if (channelId !== null) await pauseChannel(channelId, outcome.reason, now)
        break
      case "Unknown":
        break
    }
    return Option.some(message)
  }

  /**
   * `retry` and `cancel`: the organization's outbox message (in a chat) moves from status
   * `from` with `update`, one `findOneAndUpdate` guarded by that status, then its
   * `message.status_updated` event when `event` (a second write).
   */
  const move = async (
    organizationId: string,
    id: string,
    from: ReadonlyArray<MessageStatus>,
    update: Document,
    event: boolean,
    now: string
  ): Promise<OutboxMoveOutcome> => {
    const outbox: Document = { ...owned(organizationId, id), to: { $exists: true }, direction: eq("outbound") }
    const current = await messages.findOne(outbox)
    if (current === null || !(await chatExists(collections, organizationId, current.chat_uuid))) return { _tag: "NotFound" }
    const allowed = from.includes(current.status)
    const document = !allowed ? null : await messages.findOneAndUpdate({ ...outbox, status: eq(current.status) }, update, { returnDocument: "after" })
    if (document === null) {
      const found = !allowed ? current : await messages.findOne(outbox)
      return found === null ? { _tag: "NotFound" } : { _tag: "Refused", message: messageRecord(found) }
    }
    if (event) await pushStatusEvent(collections, document, now)
    return { _tag: "Done", message: messageRecord(document) }
  }

  return {
    claim: (request) => attempt("outbox.claim", () => claim(request)),
    record: withPromise(
      (id, lease, outcome, now) => attempt("outbox.record", () => record(id, lease, outcome, now)),
      (id, lease, outcome, now) => attemptPromise("outbox.record", () => record(id, lease, outcome, now))
    ),
    settle: (organizationId, id, settlement) =>
      attempt("outbox.settle", async () => {
        const found = await messages.countDocuments({ ...owned(organizationId, id), to: { $exists: true } }, { limit: 1 })
        if (found === 0) return Option.none()
        const outcome = await writeStatus(collections, organizationId, id, {
          status: settlement.status,
          from: MESSAGE_STATUS_PREDECESSORS[settlement.status],
          failure: settlement.failure,
          provider_message_id: settlement.provider_message_id,
          keepProviderId: true,
          now: settlement.now
        })
        if (outcome._tag === "NotFound") return Option.none()
        if (!outcome.changed || outcome.message.provider_message_id !== settlement.provider_message_id) {
          return Option.some({ message: outcome.message, changed: outcome.changed })
        }
        const applied = await applyPending(collections, organizationId, settlement.provider_message_id, settlement.now, outcome)
        return applied._tag === "NotFound" ? Option.none() : Option.some({ message: applied.message, changed: applied.changed })
      }),
    retry: (organizationId, id, now, expiresAt) =>
      attempt("outbox.retry", () =>
        move(
          organizationId,
          id,
          ["failed"],
          {
            $set: {
              status: "queued",
              next_attempt_at: now,
              attempts: 0,
              failure: null,
              expires_at: expiresAt,
              ...ENDED_LEASE,
              updated_at: now
            }
          },
          false,
          now
        )
      ),
    cancel: (organizationId, id, failure, now) =>
      attempt("outbox.cancel", () =>
        move(
          organizationId,
          id,
          ["queued", "scheduled"],
          failedUpdate(failure, now),
          true,
          now
        )
      ),
    nextDueAt: () =>
      attempt("outbox.nextDueAt", async () => {
        // Each lane's head: the waiting messages in sequence order, the first of each lane.
        const heads = await messages
          .aggregate<{ _id: unknown; channel_uuid: string | null; status: MessageStatus; next_attempt_at: string; lease_until: number | null }>([
            { $match: { ...WAITING, status: anyOf(WAITING_STATUSES) } },
            { $sort: { sequence: 1 } },
            {
              $group: {
                _id: { organization_id: "$organization_id", channel_uuid: "$channel_uuid", to: "$to", class: "$class" },
                channel_uuid: { $first: "$channel_uuid" },
                status: { $first: "$status" },
                next_attempt_at: { $first: "$next_attempt_at" },
                lease_until: { $first: "$lease_until" }
              }
            }
          ])
          .toArray()
        const channelIds = heads.map((head) => head.channel_uuid).filter((id): id is string => typeof id === "string")
        const paused = new Set(
          channelIds.length === 0
            ? []
            : (await channels.find({ _id: anyOf(channelIds), status: eq("paused") }, { projection: { _id: 1 } }).toArray()).map((c) => c._id)
        )
        let earliest: number | null = null
        for (const head of heads) {
          if (head.channel_uuid !== null && paused.has(head.channel_uuid)) continue
          const dueAtMs = Math.max(Date.parse(head.next_attempt_at), head.status === "sending" ? (head.lease_until ?? 0) : 0)
          if (earliest === null || dueAtMs < earliest) earliest = dueAtMs
        }
        // The soonest scheduled message, any channel: a claim then promotes it.
        const [scheduled] = await messages
          .find({ ...WAITING, status: eq("scheduled") }, { sort: { next_attempt_at: 1 }, limit: 1, projection: { next_attempt_at: 1 } })
          .toArray()
        const scheduledMs = scheduled === undefined ? null : Date.parse(scheduled.next_attempt_at!)
        return scheduledMs !== null && (earliest === null || scheduledMs < earliest) ? scheduledMs : earliest
      }),
    channelQueue: (organizationId, channelId) =>
      attempt("outbox.channelQueue", async (): Promise<ChannelQueueFigures> => {
        const ofChannel = { ...WAITING, ...ofOrganization(organizationId), channel_uuid: eq(channelId) }
        const queuedOrScheduled: Document = { ...ofChannel, status: anyOf(QUEUED_FIGURES) }
        const [queued, sending, oldest] = await Promise.all([
          messages.countDocuments(queuedOrScheduled),
          messages.countDocuments({ ...ofChannel, status: eq("sending") }),
          messages.find(queuedOrScheduled, { sort: { created_at: 1, _id: 1 }, limit: 1, projection: { created_at: 1 } }).toArray()
        ])
        return { queued, sending, oldest_queued_at: oldest[0]?.created_at ?? null }
      }),
    summary: () =>
      attempt("outbox.summary", async (): Promise<ReadonlyArray<OutboxSummaryRow>> => {
        const [counted, paused] = await Promise.all([
          messages
            .aggregate<{ _id: { channel_uuid: ChannelId | null; status: MessageStatus }; count: number }>([
              { $match: WAITING },
              { $group: { _id: { channel_uuid: "$channel_uuid", status: "$status" }, count: { $sum: 1 } } }
            ])
            .toArray(),
          channels.find({ status: eq("paused") }, { projection: { _id: 1 } }).toArray()
        ])
        const ids = [...new Set(counted.map((group) => group._id.channel_uuid).filter((id) => id !== null))]
        const statuses = new Map(
          ids.length === 0
            ? []
            : (await channels.find({ _id: anyOf(ids) }, { projection: { _id: 1, status: 1 } }).toArray()).map((channel) => [channel._id, channel.status] as const)
        )
        const rows = new Map<ChannelId | null, { channel_id: ChannelId | null; channel_status: ChannelStatus | null; queued: number; sending: number }>()
        for (const channel of paused) rows.set(channel._id as ChannelId, { channel_id: channel._id as ChannelId, channel_status: "paused", queued: 0, sending: 0 })
        for (const { _id: { channel_uuid, status }, count } of counted) {
          const row = rows.get(channel_uuid) ?? {
            channel_id: channel_uuid,
            channel_status: channel_uuid === null ? null : (statuses.get(channel_uuid) ?? null),
            queued: 0,
            sending: 0
          }
          rows.set(channel_uuid, row)
          if (status === "sending") row.sending += count
          else row.queued += count
        }
        return [...rows.values()]
      }),
    resumeChannel: (organizationId, channelId, now) =>
      attempt("outbox.resumeChannel", async () => {
        const resumed = await channels.findOneAndUpdate(
          { ...owned(organizationId, channelId), status: eq("paused") },
          { $set: { status: "active", paused_reason: null, paused_at: null, updated_at: now } },
          { returnDocument: "after" }
        )
        if (resumed === null) {
          const channel = await channels.findOne(owned(organizationId, channelId))
          return channel === null ? Option.none() : Option.some({ channel: channelOf(channel), changed: false })
        }
        const channel = channelOf(resumed)
        await pushEvent(collections, "channels", organizationId, channelId, "channel.resumed", now, channel)
        await messages.updateMany(
          { ...WAITING, ...ofOrganization(organizationId), channel_uuid: eq(channelId), status: eq("queued") },
          { $set: { next_attempt_at: now } }
        )
        return Option.some({ channel, changed: true })
      })
  }
}

/**
 * The first head of `turn` the plan left over that may replace `pick` (any for a pick with
 * a slot or of an unpaced channel, else only an expired one), removed from the turn.
 */
const leftOver = (turn: ChannelTurn, pick: ClaimPick, nowIso: string): MessageDocument | undefined => {
  const fits = (head: MessageDocument) => pick.slotIndex !== null || turn.channel === undefined || head.expires_at! <= nowIso
  const index = turn.heads.findIndex((head) => !turn.picks.some((planned) => planned.document === head) && fits(head))
  return index < 0 ? undefined : turn.heads.splice(index, 1)[0]
}

/** The claim order of two due messages: `single` first, then `next_attempt_at`, then `sequence`. */
const compareClaimOrder = (a: MessageDocument, b: MessageDocument): number =>
  a.class !== b.class
    ? a.class === "single"
      ? -1
      : 1
    : a.next_attempt_at! !== b.next_attempt_at!
      ? a.next_attempt_at! < b.next_attempt_at!
        ? -1
        : 1
      : a.sequence! - b.sequence!
