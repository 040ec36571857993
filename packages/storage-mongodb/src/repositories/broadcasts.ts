import { Option } from "effect"
import type {
  Broadcast,
  BroadcastAudience,
  BroadcastCancelOutcome,
  BroadcastCounts,
  BroadcastId,
  BroadcastRecipient,
  BroadcastRecipientWrite,
  BroadcastRepository,
  ChannelId,
  ChatAppendRequest,
  ContactId,
  GroupId,
  LabelId,
  MessageFailure,
  MessageId,
  MessageStatus,
  OrganizationId
} from "@switchboard/core"
import type { Document } from "mongodb"
import type { BroadcastDocument, ContactDocument } from "../internal/documents.js"
import { attempt, onDuplicateKey } from "../internal/driver.js"
import {
  anyOf,
  audienceFilter,
  claimStartPipeline,
  CONTACT_PROJECTION,
  dueStartFilter,
  eq,
  NEWEST_FIRST,
  NEXT_START_READS,
  ofOrganization,
  owned,
  ownedAmong,
  recipientCountsPipeline,
  recipientsOf
} from "../internal/queries.js"
import { contactRecords, transportOfOlder } from "../internal/records.js"
import { type Collections, WAITING } from "../internal/schema.js"
import type { Usage } from "../internal/usage.js"
import { messageAppender } from "./chats.js"
import { failWaitingMessages } from "./outbox.js"
import { pendingEvent, subscribersOf } from "./webhooks.js"

/** The counts of a broadcast without recipients. */
const NO_RECIPIENTS: BroadcastCounts = { total: 0, queued: 0, sending: 0, sent: 0, delivered: 0, read: 0, failed: 0 }

/** The statuses of a broadcast that has not ended: the only ones `cancel` and `stop` move from. */
const LIVE_STATUSES = ["scheduled", "sending"] as const

/** The statuses of a recipient still waiting to be sent: a broadcast with one does not complete. */
const WAITING_STATUSES: ReadonlyArray<MessageStatus> = ["queued", "sending"]

/** `{code, title}` of a failure, without any other key it may carry. */
const failureOf = (failure: MessageFailure): MessageFailure => ({ code: failure.code, title: failure.title })

/** The broadcast record of a document with its `counts`. */
const broadcastRecord = (document: BroadcastDocument, counts: BroadcastCounts): Broadcast => ({
  uuid: document._id as BroadcastId,
  name: document.name,
  status: document.status,
  template: JSON.parse(document.template),
  audience: {
    group_uuids: [...document.audience.group_uuids] as Array<GroupId>,
    label_uuids: [...document.audience.label_uuids] as Array<LabelId>,
    contact_uuids: [...document.audience.contact_uuids] as Array<ContactId>
  },
  channel_uuid: document.channel_uuid as ChannelId | null,
  transport: document.transport ?? transportOfOlder(document.channel_uuid),
  send_at: document.send_at,
  created_at: document.created_at,
  started_at: document.started_at,
  completed_at: document.completed_at,
  stopped_reason: document.stopped_reason === null ? null : failureOf(document.stopped_reason),
  counts
})

/**
 * The `appendMessage` request of one recipient (as the memory store makes it): the
 * contact by uuid, its chat created `open` as `chat_uuid` when missing, never reopened
 * nor counted unread; a `queued` message enters the send queue as class `broadcast`, due
 * at once; a skipped (`failed`) one gets no dispatch state.
 */
const appendRequestOf = (recipient: BroadcastRecipientWrite, now: string): ChatAppendRequest => ({
  contact: { _tag: "ById", uuid: recipient.contact_uuid },
  newChat: { uuid: recipient.chat_uuid, status: "open" },
  message: recipient.message,
  unreadIncrement: 0,
  reopen: { from: [], to: "open" },
  dedupe: false,
  now,
  ...(recipient.message.status === "queued"
    ? { outbox: { to: recipient.to, class: "broadcast" as const, expires_at: recipient.expires_at, claim: null } }
    : {})
})

/**
 * `Storage.broadcasts` on MongoDB, without multi-document transactions (docs/broadcasts.md;
 * documents.ts `BroadcastDocument`). A broadcast is a document of `broadcasts`; its
 * RECIPIENTS are messages of the `messages` collection with `broadcast_uuid` set, appended
 * to each contact's chat by the very code of `chats.appendMessage` (chats.ts
 * `messageAppender`: the chat created when missing, its last message and `updated_at`, a
 * queued one's dispatch state by outbox.ts `placeInOutbox`). The unique partial index
 * `messages_by_broadcast_contact` keeps one recipient per (broadcast, contact), so a start
 * resumed after a crash, or two holders of one start, never write a contact twice.
 * `counts` are read at each read from the recipients' statuses (one `$group` on
 * `messages_by_broadcast_status`), never stored.
 *
 * - `claimStart` is one `findOneAndUpdate` (filter: a due scheduled broadcast or an
 *   unfinished sending start whose lease is free or ended; a pipeline update): of two
 *   processes, one gets it. `nextStartDueAt` reads the first broadcast of each branch
 *   (without its time bound) in its index's order.
 * - `writeRecipients` checks that the broadcast is `sending` under the caller's lease,
 *   skips the contacts that already have a recipient, appends each other one (a contact
 *   deleted meanwhile is skipped; a duplicate key — another holder wrote it — too), then
 *   stores the cursor, the lease's end and `start_finished` with an update conditional on
 *   the status and the lease. A batch is several writes, not one atomic step: a crash
 *   midway leaves part of it written, which the start's next holder skips when it writes
 *   the batch again from the stored cursor.
 * - `cancel` and `stop` move the broadcast with one `findOneAndUpdate` conditional on
 *   `scheduled` or `sending` (its start lease ended, `recipients_failure` stored), then
 *   fail its `queued` recipients (outbox.ts `failWaitingMessages`, an event each). A crash
 *   between the two leaves those recipients queued: they are sent.
 * - THE WINDOW of a batch written while the broadcast is cancelled or stopped: the batch
 *   checked `sending` before the cancel, so the cancel's failing of queued recipients may
 *   run before some of the batch's inserts. The batch's closing update then finds the
 *   broadcast no longer `sending`: it reads it again and fails the queued recipients with
 *   the broadcast's `recipients_failure` itself (the batch answers `false`). Until then, a
 *   recipient the batch wrote after the cancel is queued, and the send queue may claim and
 *   send it; a crash before that failing leaves such recipients queued, and they are sent.
 * - `completeFinished` reads the `sending` broadcasts whose start finished, and completes
 *   each none of whose recipients is `queued` or `sending` with one update conditional on
 *   `sending` (so once), which carries its `broadcast.completed` event (the record with its
 *   counts) in `pending_events` (webhooks.ts relays it).
 *
 * @category repositories
 */
export const broadcastRepository = (collections: Collections, usage: Usage): BroadcastRepository => {
  const { broadcasts, contacts, messages } = collections
  const { appendMessage } = messageAppender(collections, usage)

  /** The counts of each of the organization's broadcasts `ids` (one aggregation), by uuid. */
  const countsOf = async (organizationId: string, ids: ReadonlyArray<string>): Promise<Map<string, BroadcastCounts>> => {
    const counts = new Map<string, { -readonly [K in keyof BroadcastCounts]: number }>()
    if (ids.length === 0) return counts
    const rows = await messages
      .aggregate<{ _id: { broadcast: string; status: MessageStatus }; count: number }>(recipientCountsPipeline(organizationId, ids))
      .toArray()
    for (const row of rows) {
      const current = counts.get(row._id.broadcast) ?? { ...NO_RECIPIENTS }
      current[row._id.status === "scheduled" ? "queued" : row._id.status] += row.count
      current.total += row.count
      counts.set(row._id.broadcast, current)
    }
    return counts
  }

  /** The broadcast records of the organization's `documents`, in the same order, with their counts. */
  const records = async (organizationId: string, documents: ReadonlyArray<BroadcastDocument>): Promise<Array<Broadcast>> => {
    const counts = await countsOf(organizationId, documents.map((d) => d._id))
    return documents.map((d) => broadcastRecord(d, counts.get(d._id) ?? NO_RECIPIENTS))
  }

  const record = async (organizationId: string, document: BroadcastDocument): Promise<Broadcast> =>
    (await records(organizationId, [document]))[0]!

  /** Fails the `queued` recipients of the organization's broadcast with `failure` at `now` (an event each). */
  const failQueued = (organizationId: string, id: string, failure: MessageFailure, now: string) =>
    failWaitingMessages(collections, organizationId, { ...WAITING, ...recipientsOf(organizationId, id), status: eq("queued") }, failure, now)

  /**
   * Ends the organization's `scheduled` or `sending` broadcast as `status` (one
   * conditional `findOneAndUpdate`), then fails its queued recipients with `failure`. The
   * broadcast afterwards; `null` when it has none such (missing, or already ended).
   */
  const end = async (organizationId: string, id: string, status: "cancelled" | "stopped", failure: MessageFailure, now: string) => {
    const live: Document = { ...owned(organizationId, id), status: anyOf(LIVE_STATUSES) }
    const ended = await broadcasts.findOneAndUpdate(
      live,
      {
        $set: {
          status,
          completed_at: now,
          stopped_reason: status === "stopped" ? failureOf(failure) : null,
          recipients_failure: failureOf(failure),
          start_lease: null,
          start_lease_until: null
        }
      },
      { returnDocument: "after" }
    )
    if (ended !== null) await failQueued(organizationId, id, failure, now)
    return ended
  }

  /**
   * The audience with only the organization's existing groups and labels among its
   * `group_uuids` and `label_uuids` (as the memory store reads it: another organization's
   * group or label, or a label deleted while a crash left its uuid on contacts, adds no
   * contact); `contact_uuids` as given (the audience filter keeps the organization's).
   */
  const ownGroupsAndLabels = async (organizationId: string, audience: BroadcastAudience) => {
    const idsOf = (documents: ReadonlyArray<{ readonly _id: string }>) => documents.map((d) => d._id)
    const [groups, labels] = await Promise.all([
      audience.group_uuids.length === 0
        ? []
        : collections.groups.find(ownedAmong(organizationId, audience.group_uuids), { projection: { _id: 1 } }).toArray(),
      audience.label_uuids.length === 0
        ? []
        : collections.labels.find(ownedAmong(organizationId, audience.label_uuids), { projection: { _id: 1 } }).toArray()
    ])
    return { group_uuids: idsOf(groups), label_uuids: idsOf(labels), contact_uuids: audience.contact_uuids }
  }

  return {
    create: (organizationId, broadcast) =>
      attempt("broadcasts.create", async () => {
        const document: BroadcastDocument = {
          _id: broadcast.uuid,
          organization_id: organizationId,
          name: broadcast.name,
          status: broadcast.status,
          template: JSON.stringify(broadcast.template),
          audience: {
            group_uuids: [...broadcast.audience.group_uuids],
            label_uuids: [...broadcast.audience.label_uuids],
            contact_uuids: [...broadcast.audience.contact_uuids]
          },
          channel_uuid: broadcast.channel_uuid,
          transport: broadcast.transport,
          send_at: broadcast.send_at,
          created_at: broadcast.now,
          started_at: broadcast.status === "sending" ? broadcast.now : null,
          completed_at: null,
          stopped_reason: null,
          recipients_failure: null,
          start_cursor: null,
          start_finished: false,
          start_lease: null,
          start_lease_until: null
        }
        // A held uuid (an Idempotency-Key's) whose other writer stored first: that broadcast.
        const stored = await onDuplicateKey(
          async () => {
            await broadcasts.insertOne(document)
            return undefined
          },
          () => broadcasts.findOne(owned(organizationId, broadcast.uuid))
        )
        if (stored === undefined) return broadcastRecord(document, NO_RECIPIENTS)
        if (stored === null) throw new Error(`broadcasts.create: uuid ${broadcast.uuid} is another organization's`)
        return record(organizationId, stored)
      }),
    findById: (organizationId, id) =>
      attempt("broadcasts.findById", async () => {
        const document = await broadcasts.findOne(owned(organizationId, id))
        return document === null ? Option.none() : Option.some(await record(organizationId, document))
      }),
    list: (organizationId, { limit, after }) =>
      attempt("broadcasts.list", async () => {
        if (limit <= 0) return []
        // One range of broadcasts_by_created_at: (created_at, _id) strictly below the position.
        const filter = {
          ...ofOrganization(organizationId),
          ...(after === null
            ? {}
            : { $or: [{ created_at: { $lt: after.created_at } }, { created_at: eq(after.created_at), _id: { $lt: after.uuid } }] })
        }
        return records(organizationId, await broadcasts.find(filter, { sort: NEWEST_FIRST, limit }).toArray())
      }),
    sending: (organizationId) =>
      attempt("broadcasts.sending", async () =>
        // broadcasts_by_start's `sending` range (every sending broadcast, a handful), by organization.
        records(
          organizationId,
          await broadcasts.find({ status: eq("sending"), ...ofOrganization(organizationId) }, { sort: { created_at: 1, _id: 1 } }).toArray()
        )
      ),
    recipients: (organizationId, id, { status, limit, after }) =>
      attempt("broadcasts.recipients", async () => {
        const rows: Array<BroadcastRecipient> = []
        if (limit <= 0 || (await broadcasts.countDocuments(owned(organizationId, id), { limit: 1 })) === 0) return rows
        // In contact order on messages_by_broadcast_contact (messages_by_broadcast_status
        // with a status). A recipient without `to` (skipped: never in the send queue) shows
        // its contact's phone; one whose contact is gone too is left out, and the next
        // page read fills its place.
        for (let position = after; rows.length < limit; ) {
          const wanted = limit - rows.length
          const page = await messages
            .find(
              {
                ...recipientsOf(organizationId, id),
                ...(status === null ? {} : { status: eq(status) }),
                ...(position === null ? {} : { contact_uuid: { $gt: position } })
              },
              { sort: { contact_uuid: 1 }, limit: wanted, projection: { contact_uuid: 1, to: 1, status: 1, failure: 1 } }
            )
            .toArray()
          const unsent = page.filter((d) => d.to === undefined).map((d) => d.contact_uuid)
          const phones = new Map(
            (unsent.length === 0 ? [] : await contacts.find(ownedAmong(organizationId, unsent), { projection: { phone: 1 } }).toArray()).map(
              (c) => [c._id, c.phone]
            )
          )
          for (const d of page) {
            const phone = d.to ?? phones.get(d.contact_uuid)
            if (phone === undefined) continue
            const failure = d.failure === undefined || d.failure === null ? null : failureOf(d.failure)
            rows.push({ contact_uuid: d.contact_uuid as ContactId, phone, message_uuid: d._id as MessageId, status: d.status, failure })
          }
          if (page.length < wanted) break
          position = page[page.length - 1]!.contact_uuid as ContactId
        }
        return rows
      }),
    countAudience: (organizationId, audience) =>
      attempt("broadcasts.countAudience", async () => {
        const filter = audienceFilter(organizationId, await ownGroupsAndLabels(organizationId, audience), null)
        return filter === null ? 0 : contacts.countDocuments(filter)
      }),
    audiencePage: (organizationId, audience, after, limit) =>
      attempt("broadcasts.audiencePage", async () => {
        const filter = limit <= 0 ? null : audienceFilter(organizationId, await ownGroupsAndLabels(organizationId, audience), after)
        if (filter === null) return []
        const documents = await contacts.find(filter, { sort: { _id: 1 }, limit, projection: CONTACT_PROJECTION }).toArray()
        return contactRecords(collections, organizationId, documents as Array<ContactDocument>)
      }),
    claimStart: ({ now, lease, leaseUntil }) =>
      attempt("broadcasts.claimStart", async () => {
        const claimed = await broadcasts.findOneAndUpdate(dueStartFilter(now), claimStartPipeline(now, lease, leaseUntil), {
          returnDocument: "after"
        })
        if (claimed === null) return Option.none()
        return Option.some({
          organization_id: claimed.organization_id as OrganizationId,
          broadcast: await record(claimed.organization_id, claimed),
          lease,
          cursor: claimed.start_cursor as ContactId | null
        })
      }),
    nextStartDueAt: () =>
      attempt("broadcasts.nextStartDueAt", async () => {
        const { scheduled, resumable } = NEXT_START_READS
        const [first, held] = await Promise.all([
          broadcasts.find(scheduled.filter, { sort: scheduled.sort, limit: 1, projection: scheduled.projection }).toArray(),
          broadcasts.find(resumable.filter, { sort: resumable.sort, limit: 1, projection: resumable.projection }).toArray()
        ])
        const due: Array<number> = []
        if (typeof first[0]?.send_at === "string") due.push(Date.parse(first[0].send_at))
        if (held[0] !== undefined) due.push(held[0].start_lease_until ?? 0)
        return due.length === 0 ? null : Math.min(...due)
      }),
    writeRecipients: (organizationId, id, lease, batch) =>
      attempt("broadcasts.writeRecipients", async () => {
        const held: Document = { ...owned(organizationId, id), status: eq("sending"), start_lease: eq(lease) }
        if ((await broadcasts.countDocuments(held, { limit: 1 })) === 0) return false
        const contactIds = batch.recipients.map((recipient) => recipient.contact_uuid)
        const written = new Set(
          contactIds.length === 0
            ? []
            : (
                await messages
                  .find({ ...recipientsOf(organizationId, id), contact_uuid: anyOf(contactIds) }, { projection: { contact_uuid: 1 } })
                  .toArray()
              ).map((d) => d.contact_uuid)
        )
        for (const recipient of batch.recipients) {
          if (written.has(recipient.contact_uuid)) continue
          // A contact deleted meanwhile answers ContactNotFound (nothing written); another
          // holder of the start that wrote this contact first makes the insert a duplicate key.
          await onDuplicateKey(
            () => appendMessage(organizationId, appendRequestOf(recipient, batch.now)),
            () => undefined
          )
        }
        const stored = await broadcasts.updateOne(held, {
          $set: {
            start_cursor: batch.cursor,
            start_finished: batch.finished,
            start_lease: batch.finished ? null : lease,
            start_lease_until: batch.finished ? null : batch.leaseUntil
          }
        })
        if (stored.matchedCount > 0) return true
        // No longer sending under this lease. Cancelled or stopped meanwhile: the cancel may
        // have failed the queued recipients before some of this batch's inserts, so the
        // batch fails those it wrote itself (see the window above). Another holder took the
        // start: what was written stays, and it skips those contacts.
        const current = await broadcasts.findOne(owned(organizationId, id), { projection: { recipients_failure: 1 } })
        if (current !== null && current.recipients_failure !== null && current.recipients_failure !== undefined) {
          await failQueued(organizationId, id, current.recipients_failure, batch.now)
        }
        return false
      }),
    cancel: (organizationId, id, failure, now) =>
      attempt("broadcasts.cancel", async (): Promise<BroadcastCancelOutcome> => {
        const ended = await end(organizationId, id, "cancelled", failure, now)
        if (ended !== null) return { _tag: "Done", broadcast: await record(organizationId, ended) }
        const current = await broadcasts.findOne(owned(organizationId, id))
        return current === null ? { _tag: "NotFound" } : { _tag: "Refused", broadcast: await record(organizationId, current) }
      }),
    stop: (organizationId, id, reason, now) =>
      attempt("broadcasts.stop", async () => {
        const ended = await end(organizationId, id, "stopped", reason, now)
        return ended === null ? Option.none() : Option.some(await record(organizationId, ended))
      }),
    completeFinished: (now) =>
      attempt("broadcasts.completeFinished", async () => {
        const completed: Array<Broadcast> = []
        const finished: Document = { status: eq("sending"), start_finished: eq(true) }
        for (const document of await broadcasts.find(finished).toArray()) {
          const organizationId = document.organization_id
          const waiting: Document = { ...recipientsOf(organizationId, document._id), status: anyOf(WAITING_STATUSES) }
          if ((await messages.countDocuments(waiting, { limit: 1 })) > 0) continue
          const done = await record(organizationId, { ...document, status: "completed", completed_at: now })
          const endpoints = (await subscribersOf(collections, organizationId))("broadcast.completed")
          const event = endpoints.length === 0 ? {} : { $push: { pending_events: pendingEvent("broadcast.completed", now, endpoints, done) } }
          const result = await broadcasts.updateOne({ _id: eq(document._id), ...finished }, { $set: { status: "completed", completed_at: now }, ...event })
          if (result.matchedCount > 0) completed.push(done)
        }
        return completed
      })
  }
}
