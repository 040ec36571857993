import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import {
  BROADCAST_CANCELLED_FAILURE,
  type BroadcastAudience,
  type BroadcastId,
  type BroadcastRecipient,
  type BroadcastRecipientWrite,
  type ChatId,
  type Contact,
  type ContactId,
  type MessageFailure,
  type MessageId,
  type OrganizationId,
  Storage,
  type ChannelId,
  type TransportKind
} from "@switchboard/core"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { T0, at, claimAt, writtenEvents } from "./outbox-support.js"
import { addEndpoint, claim as claimDeliveries } from "./webhook-support.js"
import { assignLabel, createGroup, createLabel, importContacts, insertChannel, insertOrganization, runner, sharedRunner } from "./support.js"

const template = { name: "order_update", language: { code: "en_US" }, components: [] }
const STOPPED: MessageFailure = { code: "132015", title: "Template paused" }
const OPTED_OUT: MessageFailure = { code: "opted_out", title: "Opted out" }
const START_LEASE_MS = 30_000
/** Claims of the webhook outbox far after every event (every delivery due). */
const EVENTS_AT = "2999-01-01T00:00:00.000Z"
const EVENTS_LEASE_UNTIL = "2999-01-01T00:00:01.000Z"

/** A new broadcast of the organization to `audience`, `sending` (or `scheduled` at `sendAt`) created at `at(0)`. */
const createBroadcast = (
  organizationId: OrganizationId,
  audience: Partial<BroadcastAudience>,
  options: {
    readonly sendAt?: string
    readonly now?: string
    readonly name?: string
    readonly channelUuid?: ChannelId | null
    readonly transport?: TransportKind
    readonly uuid?: BroadcastId
  } = {}
) =>
  Effect.flatMap(Storage, ({ broadcasts }) =>
    broadcasts.create(organizationId, {
      uuid: options.uuid ?? (fixtures.uuid() as BroadcastId),
      name: options.name ?? "Spring sale",
      status: options.sendAt === undefined ? "sending" : "scheduled",
      template,
      audience: { group_uuids: [], label_uuids: [], contact_uuids: [], ...audience },
      channel_uuid: options.channelUuid ?? null,
      transport: options.transport ?? "recording",
      send_at: options.sendAt ?? null,
      now: options.now ?? at(0)
    }))

/** `n` contacts of the organization with phones `phone(base)`, `phone(base + 1)`, …, their uuids ascending. */
const contacts = (organizationId: OrganizationId, n: number, base = 0) =>
  Effect.map(
    importContacts(organizationId, Array.from({ length: n }, (_, i) => fixtures.importRow(fixtures.phone(base + i), { first_name: `C${i}` }))),
    (result) => result.contacts.map((contact) => contact.uuid).sort()
  )

/** The recipient write of `contact` (queued unless `failure` is given). */
const recipientOf = (
  broadcastId: BroadcastId,
  contact: Pick<Contact, "uuid" | "phone">,
  failure: MessageFailure | null = null,
  now = at(1),
  transport: TransportKind = "recording"
): BroadcastRecipientWrite => ({
  contact_uuid: contact.uuid,
  chat_uuid: fixtures.uuid() as ChatId,
  message: {
    uuid: fixtures.uuid() as MessageId,
    direction: "outbound",
    type: "template",
    text: "Your order shipped",
    template,
    media: null,
    content: null,
    status: failure === null ? "queued" : "failed",
    provider_message_id: null,
    failure,
    channel_uuid: null,
    transport,
    attempts: 0,
    next_attempt_at: null,
    broadcast_uuid: broadcastId,
    reply_to: null,
    reactions: [],
    created_at: now,
    updated_at: now
  },
  to: contact.phone,
  expires_at: fixtures.instant(10_000)
})

/** Claims the due start at `ms` after T0; expects one. */
const claimStartAt = (ms: number, lease = fixtures.uuid()) =>
  Effect.flatMap(Storage, ({ broadcasts }) => broadcasts.claimStart({ now: T0 + ms, lease, leaseUntil: T0 + ms + START_LEASE_MS }))

/** Writes the audience page after `cursor` as one batch of recipients (every contact queued, or failed per `failed`). */
const writePage = (
  organizationId: OrganizationId,
  broadcastId: BroadcastId,
  lease: string,
  page: ReadonlyArray<Contact>,
  options: { readonly finished: boolean; readonly failed?: (contact: Contact) => MessageFailure | null; readonly ms?: number }
) =>
  Effect.flatMap(Storage, ({ broadcasts }) =>
    broadcasts.writeRecipients(organizationId, broadcastId, lease, {
      recipients: page.map((contact) => recipientOf(broadcastId, contact, options.failed?.(contact) ?? null, at(options.ms ?? 1))),
      cursor: page[page.length - 1]?.uuid ?? null,
      finished: options.finished,
      leaseUntil: T0 + (options.ms ?? 1) + START_LEASE_MS,
      now: at(options.ms ?? 1)
    }))

/** Starts a `sending` broadcast: claims it, writes its whole audience as one batch (finished). Returns the lease. */
const startWhole = (organizationId: OrganizationId, broadcastId: BroadcastId, failed?: (contact: Contact) => MessageFailure | null) =>
  Effect.gen(function* () {
    const { broadcasts } = yield* Storage
    const claimed = yield* claimStartAt(1)
    expect(Option.map(claimed, (start) => start.broadcast.uuid)).toEqual(Option.some(broadcastId))
    const lease = Option.getOrThrow(claimed).lease
    const broadcast = Option.getOrThrow(yield* broadcasts.findById(organizationId, broadcastId))
    const page = yield* broadcasts.audiencePage(organizationId, broadcast.audience, null, 1_000)
    expect(yield* writePage(organizationId, broadcastId, lease, page, { finished: true, ...(failed === undefined ? {} : { failed }) })).toBe(true)
    return lease
  })

const countsOf = (organizationId: OrganizationId, id: BroadcastId) =>
  Effect.flatMap(Storage, ({ broadcasts }) => Effect.map(broadcasts.findById(organizationId, id), (found) => Option.getOrThrow(found).counts))

/**
 * Contract of `Storage.broadcasts` and the contact's marketing opt-out (docs/broadcasts.md):
 * create, read, list; the audience counted and read in pages; claims of due starts (a
 * scheduled one, a resumed one, leases); recipients written in batches (chat messages in
 * the send queue as class `broadcast`, skipped ones `failed`, each contact once, the lease
 * and the status guard); counts; recipients listed; cancel; stop; completion with its
 * event. With `options.makeSharedLayers`, one claimant of a start among two stores.
 */
export const broadcastsContract = (options: StorageContractOptions): void => {
  const run = runner(options)
  const shared = sharedRunner(options)

  describe("broadcasts: records", () => {
    it.effect("create answers the record with zero counts; findById reads it; another organization does not see it", () =>
      run(
        Effect.gen(function* () {
          const { broadcasts } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const [contact] = yield* contacts(org.id, 1)
          const created = yield* createBroadcast(org.id, { contact_uuids: [contact!] })
          expect(created).toMatchObject({
            name: "Spring sale",
            status: "sending",
            template,
            audience: { group_uuids: [], label_uuids: [], contact_uuids: [contact] },
            channel_uuid: null,
            send_at: null,
            created_at: at(0),
            started_at: at(0),
            completed_at: null,
            stopped_reason: null,
            counts: { total: 0, queued: 0, sending: 0, sent: 0, delivered: 0, read: 0, failed: 0 }
          })
          expect(yield* broadcasts.findById(org.id, created.uuid)).toEqual(Option.some(created))
          expect(yield* broadcasts.findById(other.id, created.uuid)).toEqual(Option.none())
          const scheduled = yield* createBroadcast(org.id, { contact_uuids: [contact!] }, { sendAt: at(60_000) })
          expect(scheduled).toMatchObject({ status: "scheduled", send_at: at(60_000), started_at: null })
        })
      ))

    it.effect("create of a uuid the organization has answers that broadcast as stored, writing nothing", () =>
      run(
        Effect.gen(function* () {
          const { broadcasts } = yield* Storage
          const org = yield* insertOrganization()
          const [contact] = yield* contacts(org.id, 1)
          // The first writer of a held uuid (an Idempotency-Key's), then the second.
          const first = yield* createBroadcast(org.id, { contact_uuids: [contact!] })
          const again = yield* createBroadcast(org.id, { contact_uuids: [] }, { uuid: first.uuid, name: "Second", sendAt: at(60_000), now: at(5) })
          expect(again).toEqual(first)
          expect(yield* broadcasts.findById(org.id, first.uuid)).toEqual(Option.some(first))
          expect(yield* broadcasts.list(org.id, { limit: 10, after: null })).toEqual([first])
        })
      ))

    it.effect("transport: stored at create as given, read by findById, list, a claimed start and the recipients' messages", () =>
      run(
        Effect.gen(function* () {
          const { broadcasts, chats } = yield* Storage
          const org = yield* insertOrganization()
          const [contact] = yield* contacts(org.id, 1)
          const channel = yield* insertChannel(org.id)
          const recorded = yield* createBroadcast(org.id, { contact_uuids: [contact!] }, { sendAt: at(60_000) })
          const custom = yield* createBroadcast(org.id, { contact_uuids: [contact!] }, { sendAt: at(60_000), transport: "custom", now: at(1) })
          const viaChannel = yield* createBroadcast(org.id, { contact_uuids: [contact!] }, { channelUuid: channel.uuid, transport: "whatsapp", now: at(2) })
          expect([recorded.transport, custom.transport, viaChannel.transport]).toEqual(["recording", "custom", "whatsapp"])
          expect(yield* broadcasts.findById(org.id, viaChannel.uuid)).toEqual(Option.some(viaChannel))
          const listed = yield* broadcasts.list(org.id, { limit: 10, after: null })
          expect(listed.map((each) => each.transport)).toEqual(["whatsapp", "custom", "recording"])
          const start = Option.getOrThrow(yield* claimStartAt(3))
          expect([start.broadcast.uuid, start.broadcast.transport]).toEqual([viaChannel.uuid, "whatsapp"])
          const written = yield* broadcasts.writeRecipients(org.id, viaChannel.uuid, start.lease, {
            recipients: [{ ...recipientOf(viaChannel.uuid, { uuid: contact!, phone: fixtures.phone(0) }, null, at(3), "whatsapp") }],
            cursor: contact!,
            finished: true,
            leaseUntil: T0 + 3 + START_LEASE_MS,
            now: at(3)
          })
          expect(written).toBe(true)
          const [recipient] = yield* broadcasts.recipients(org.id, viaChannel.uuid, { status: null, limit: 10, after: null })
          expect(Option.map(yield* chats.findMessage(org.id, recipient!.message_uuid), (message) => message.transport)).toEqual(Option.some("whatsapp"))
        })
      ))

    it.effect("list: newest first, keyset after a position, only the organization's", () =>
      run(
        Effect.gen(function* () {
          const { broadcasts } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const [contact] = yield* contacts(org.id, 1)
          const made = []
          for (const minute of [1, 2, 2, 3]) made.push(yield* createBroadcast(org.id, { contact_uuids: [contact!] }, { now: fixtures.instant(minute) }))
          yield* createBroadcast(other.id, { contact_uuids: [contact!] })
          const expected = [...made].sort((a, b) => (a.created_at === b.created_at ? (a.uuid < b.uuid ? 1 : -1) : a.created_at < b.created_at ? 1 : -1))
          const all = yield* broadcasts.list(org.id, { limit: 10, after: null })
          expect(all.map((b) => b.uuid)).toEqual(expected.map((b) => b.uuid))
          const first = yield* broadcasts.list(org.id, { limit: 2, after: null })
          const rest = yield* broadcasts.list(org.id, { limit: 10, after: { created_at: first[1]!.created_at, uuid: first[1]!.uuid } })
          expect([...first, ...rest].map((b) => b.uuid)).toEqual(expected.map((b) => b.uuid))
        })
      ))
  })

  describe("broadcasts: the audience", () => {
    it.effect("the union of groups, labels and contacts, each contact once, in uuid order, paged; other organizations' uuids add none", () =>
      run(
        Effect.gen(function* () {
          const { broadcasts, contacts: contactRepository } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const ids = yield* contacts(org.id, 6)
          const [otherContact] = yield* contacts(other.id, 1, 100)
          const group = yield* createGroup(org.id, "VIP")
          yield* contactRepository.importBulk(
            org.id,
            fixtures.importRequest(ids.slice(0, 3).map((_, i) => fixtures.importRow(fixtures.phone(i), {}, [fixtures.groupWithId(group.uuid)])))
          )
          const label = yield* createLabel(org.id, "Hot")
          yield* assignLabel(org.id, label, [ids[2]!, ids[3]!])
          const otherGroup = yield* createGroup(other.id, "Theirs")
          const audience: BroadcastAudience = {
            group_uuids: [group.uuid, otherGroup.uuid],
            label_uuids: [label.uuid],
            contact_uuids: [ids[3]!, ids[4]!, otherContact!, fixtures.uuid() as ContactId]
          }
          const inGroup = (yield* broadcasts.audiencePage(org.id, { group_uuids: [group.uuid], label_uuids: [], contact_uuids: [] }, null, 10)).map((c) => c.uuid)
          const expected = [...new Set([...inGroup, ids[2]!, ids[3]!, ids[4]!])].sort()
          expect(expected).toHaveLength(5)
          expect(yield* broadcasts.countAudience(org.id, audience)).toBe(5)
          const whole = yield* broadcasts.audiencePage(org.id, audience, null, 10)
          expect(whole.map((c) => c.uuid)).toEqual(expected)
          expect(whole[0]).toMatchObject({ phone: expect.stringMatching(/^\+1415555/), marketing_opt_out_at: null })
          const first = yield* broadcasts.audiencePage(org.id, audience, null, 2)
          const second = yield* broadcasts.audiencePage(org.id, audience, first[1]!.uuid, 2)
          const third = yield* broadcasts.audiencePage(org.id, audience, second[1]!.uuid, 2)
          expect([...first, ...second, ...third].map((c) => c.uuid)).toEqual(expected)
          expect(third).toHaveLength(1)
          expect(yield* broadcasts.countAudience(other.id, audience)).toBe(1)
        })
      ))
  })

  describe("broadcasts: starting", () => {
    it.effect("claimStart: a scheduled broadcast once its send_at has come (then sending, started_at); a held start only after its lease", () =>
      run(
        Effect.gen(function* () {
          const { broadcasts } = yield* Storage
          const org = yield* insertOrganization()
          const [contact] = yield* contacts(org.id, 1)
          const scheduled = yield* createBroadcast(org.id, { contact_uuids: [contact!] }, { sendAt: at(10_000) })
          expect(yield* claimStartAt(9_999)).toEqual(Option.none())
          const claimed = Option.getOrThrow(yield* claimStartAt(10_000, "lease-1"))
          expect(claimed).toMatchObject({ organization_id: org.id, lease: "lease-1", cursor: null })
          expect(claimed.broadcast).toMatchObject({ uuid: scheduled.uuid, status: "sending", started_at: at(10_000) })
          expect(yield* claimStartAt(10_000 + START_LEASE_MS - 1)).toEqual(Option.none())
          const again = Option.getOrThrow(yield* claimStartAt(10_000 + START_LEASE_MS, "lease-2"))
          expect(again).toMatchObject({ lease: "lease-2", cursor: null })
          expect(again.broadcast.started_at).toBe(at(10_000))
          // The first holder lost it: its batch is refused, nothing written.
          const page = yield* broadcasts.audiencePage(org.id, scheduled.audience, null, 10)
          expect(yield* writePage(org.id, scheduled.uuid, "lease-1", page, { finished: true })).toBe(false)
          expect((yield* countsOf(org.id, scheduled.uuid)).total).toBe(0)
        })
      ))

    it.effect("nextStartDueAt: null when none; a scheduled send_at; a held start's lease end (0 when free); ended and finished starts ignored; the earliest, as claimStart finds it", () =>
      run(
        Effect.gen(function* () {
          const { broadcasts } = yield* Storage
          const org = yield* insertOrganization()
          const ids = yield* contacts(org.id, 2)
          expect(yield* broadcasts.nextStartDueAt()).toBeNull()
          // Starts claimStart never takes again, each left with what the other branch would read.
          // A cancelled scheduled broadcast: its send_at stays.
          const cancelledScheduled = yield* createBroadcast(org.id, { contact_uuids: ids }, { sendAt: at(5_000) })
          expect((yield* broadcasts.cancel(org.id, cancelledScheduled.uuid, BROADCAST_CANCELLED_FAILURE, at(1)))._tag).toBe("Done")
          // A completed one, once scheduled: its send_at stays, its start finished.
          const completed = yield* createBroadcast(org.id, { contact_uuids: ids }, { sendAt: at(1) })
          yield* startWhole(org.id, completed.uuid, () => OPTED_OUT)
          expect((yield* broadcasts.completeFinished(at(2))).map((b) => b.uuid)).toEqual([completed.uuid])
          // A cancelled one cancelled midway through its start: unfinished, its lease free.
          const cancelledMidway = yield* createBroadcast(org.id, { contact_uuids: ids })
          const midway = Option.getOrThrow(yield* claimStartAt(3))
          expect(midway.broadcast.uuid).toBe(cancelledMidway.uuid)
          const firstPage = yield* broadcasts.audiencePage(org.id, cancelledMidway.audience, null, 1)
          expect(yield* writePage(org.id, cancelledMidway.uuid, midway.lease, firstPage, { finished: false, ms: 3 })).toBe(true)
          expect((yield* broadcasts.cancel(org.id, cancelledMidway.uuid, BROADCAST_CANCELLED_FAILURE, at(4)))._tag).toBe("Done")
          // A sending one whose start finished, its recipients still queued: its lease free.
          const finished = yield* createBroadcast(org.id, { contact_uuids: ids })
          yield* startWhole(org.id, finished.uuid)
          expect(yield* broadcasts.nextStartDueAt()).toBeNull()
          expect(yield* claimStartAt(10 * START_LEASE_MS)).toEqual(Option.none())

          // A sending broadcast not claimed yet: due at once.
          const fresh = yield* createBroadcast(org.id, { contact_uuids: ids })
          expect(yield* broadcasts.nextStartDueAt()).toBe(0)
          const held = Option.getOrThrow(yield* claimStartAt(100))
          expect(held.broadcast.uuid).toBe(fresh.uuid)
          // Held: due when its lease ends.
          expect(yield* broadcasts.nextStartDueAt()).toBe(T0 + 100 + START_LEASE_MS)
          // A later scheduled one leaves the earlier lease end; an earlier one comes first.
          yield* createBroadcast(org.id, { contact_uuids: ids }, { sendAt: at(60_000) })
          expect(yield* broadcasts.nextStartDueAt()).toBe(T0 + 100 + START_LEASE_MS)
          const soon = yield* createBroadcast(org.id, { contact_uuids: ids }, { sendAt: at(20_000) })
          expect(yield* broadcasts.nextStartDueAt()).toBe(T0 + 20_000)
          // claimStart finds nothing before that time, and that broadcast at it.
          expect(yield* claimStartAt(19_999)).toEqual(Option.none())
          expect(Option.map(yield* claimStartAt(20_000), (start) => start.broadcast.uuid)).toEqual(Option.some(soon.uuid))
          // Claimed, its lease ends after the first one's: the first one's lease end again.
          expect(yield* broadcasts.nextStartDueAt()).toBe(T0 + 100 + START_LEASE_MS)
        })
      ))

    it.effect("writeRecipients: messages in the contacts' chats, queued ones in the send queue as broadcast; skipped ones failed; the cursor resumes; each contact once", () =>
      run(
        Effect.gen(function* () {
          const { broadcasts, chats } = yield* Storage
          const org = yield* insertOrganization()
          yield* contacts(org.id, 5)
          const group = yield* createGroup(org.id, "All")
          const { contacts: contactRepository } = yield* Storage
          yield* contactRepository.importBulk(
            org.id,
            fixtures.importRequest(Array.from({ length: 5 }, (_, i) => fixtures.importRow(fixtures.phone(i), {}, [fixtures.groupWithId(group.uuid)])))
          )
          const broadcast = yield* createBroadcast(org.id, { group_uuids: [group.uuid] })
          const start = Option.getOrThrow(yield* claimStartAt(1, "lease-1"))
          const first = yield* broadcasts.audiencePage(org.id, broadcast.audience, null, 3)
          const skippedId = first[1]!.uuid
          expect(yield* writePage(org.id, broadcast.uuid, start.lease, first, {
            finished: false,
            failed: (contact) => (contact.uuid === skippedId ? OPTED_OUT : null)
          })).toBe(true)
          expect(yield* countsOf(org.id, broadcast.uuid)).toEqual({ total: 3, queued: 2, sending: 0, sent: 0, delivered: 0, read: 0, failed: 1 })
          // Its holder died: the start resumes after the cursor, under a new lease.
          const resumed = Option.getOrThrow(yield* claimStartAt(1 + START_LEASE_MS, "lease-2"))
          expect(resumed.cursor).toBe(first[2]!.uuid)
          // A batch written again (the crash came after the write) adds nobody twice.
          expect(yield* writePage(org.id, broadcast.uuid, "lease-2", first, { finished: false, ms: 2 })).toBe(true)
          const rest = yield* broadcasts.audiencePage(org.id, broadcast.audience, resumed.cursor, 3)
          expect(rest).toHaveLength(2)
          expect(yield* writePage(org.id, broadcast.uuid, "lease-2", rest, { finished: true, ms: 2 })).toBe(true)
          expect(yield* countsOf(org.id, broadcast.uuid)).toEqual({ total: 5, queued: 4, sending: 0, sent: 0, delivered: 0, read: 0, failed: 1 })
          // A finished start is never claimed again.
          expect(yield* claimStartAt(1_000_000)).toEqual(Option.none())
          const recipients = yield* broadcasts.recipients(org.id, broadcast.uuid, { status: null, limit: 10, after: null })
          expect(recipients.map((r) => r.contact_uuid)).toEqual([...first, ...rest].map((c) => c.uuid))
          const skipped = recipients.find((r) => r.contact_uuid === skippedId)!
          expect(skipped).toMatchObject({ status: "failed", failure: OPTED_OUT, phone: first[1]!.phone })
          // Each recipient is a message of its contact's chat, with the broadcast's uuid.
          const chat = Option.getOrThrow(yield* chats.findByContact(org.id, first[0]!.uuid))
          const page = Option.getOrThrow(yield* chats.listMessages(org.id, chat.uuid, { page: 1, per_page: 10 }))
          expect(page.items.map((m) => [m.uuid, m.broadcast_uuid, m.status])).toEqual([[recipients[0]!.message_uuid, broadcast.uuid, "queued"]])
          expect(chat.last_message_at).toBe(at(1))
          // The queued ones are claimable by the send queue as class broadcast; the skipped one is not.
          const claimed = yield* claimAt(10, { limit: 10 })
          expect(claimed.map((c) => c.message.uuid).sort()).toEqual(recipients.filter((r) => r.status === "queued").map((r) => r.message_uuid).sort())
          expect(claimed.every((c) => c.class === "broadcast")).toBe(true)
          const filtered = yield* broadcasts.recipients(org.id, broadcast.uuid, { status: "failed", limit: 10, after: null })
          expect(filtered.map((r) => r.contact_uuid)).toEqual([skippedId])
          const paged = yield* broadcasts.recipients(org.id, broadcast.uuid, { status: null, limit: 2, after: recipients[1]!.contact_uuid })
          expect(paged.map((r) => r.contact_uuid)).toEqual([recipients[2]!.contact_uuid, recipients[3]!.contact_uuid])
        })
      ))

    it.effect("writeRecipients skips a contact deleted since its page was read", () =>
      run(
        Effect.gen(function* () {
          const { broadcasts, contacts: contactRepository } = yield* Storage
          const org = yield* insertOrganization()
          const ids = yield* contacts(org.id, 2)
          const broadcast = yield* createBroadcast(org.id, { contact_uuids: ids })
          const start = Option.getOrThrow(yield* claimStartAt(1))
          const page = yield* broadcasts.audiencePage(org.id, broadcast.audience, null, 10)
          yield* contactRepository.delete(org.id, ids[0]!)
          expect(yield* writePage(org.id, broadcast.uuid, start.lease, page, { finished: true })).toBe(true)
          const recipients = yield* broadcasts.recipients(org.id, broadcast.uuid, { status: null, limit: 10, after: null })
          expect(recipients.map((r) => r.contact_uuid)).toEqual([ids[1]])
        })
      ))

    it.effect("a contact deleted after its recipient was written leaves the counts and the recipients", () =>
      run(
        Effect.gen(function* () {
          const { broadcasts, contacts: contactRepository } = yield* Storage
          const org = yield* insertOrganization()
          const ids = yield* contacts(org.id, 2)
          const broadcast = yield* createBroadcast(org.id, { contact_uuids: ids })
          yield* startWhole(org.id, broadcast.uuid)
          yield* contactRepository.delete(org.id, ids[0]!)
          expect(yield* countsOf(org.id, broadcast.uuid)).toMatchObject({ total: 1, queued: 1 })
          const recipients = yield* broadcasts.recipients(org.id, broadcast.uuid, { status: null, limit: 10, after: null })
          expect(recipients.map((r) => r.contact_uuid)).toEqual([ids[1]])
        })
      ))
  })

  describe("broadcasts: cancel, stop, complete", () => {
    it.effect("cancel: cancelled with completed_at; its queued recipients failed (an event each), a sending one kept; a batch after it refused; twice → Refused", () =>
      run(
        Effect.gen(function* () {
          const { broadcasts } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const ids = yield* contacts(org.id, 3)
          const broadcast = yield* createBroadcast(org.id, { contact_uuids: ids })
          const start = Option.getOrThrow(yield* claimStartAt(1))
          const page = yield* broadcasts.audiencePage(org.id, broadcast.audience, null, 2)
          yield* writePage(org.id, broadcast.uuid, start.lease, page, { finished: false })
          const [inFlight] = yield* claimAt(10, { limit: 1 })
          yield* addEndpoint(org.id, { events: ["message.status_updated", "broadcast.completed"] })
          expect((yield* broadcasts.cancel(other.id, broadcast.uuid, BROADCAST_CANCELLED_FAILURE, at(20)))._tag).toBe("NotFound")
          const outcome = yield* broadcasts.cancel(org.id, broadcast.uuid, BROADCAST_CANCELLED_FAILURE, at(20))
          if (outcome._tag !== "Done") return expect.fail(`expected Done, got ${outcome._tag}`)
          expect(outcome.broadcast).toMatchObject({ status: "cancelled", completed_at: at(20), stopped_reason: null })
          expect(outcome.broadcast.counts).toEqual({ total: 2, queued: 0, sending: 1, sent: 0, delivered: 0, read: 0, failed: 1 })
          const failed = yield* broadcasts.recipients(org.id, broadcast.uuid, { status: "failed", limit: 10, after: null })
          expect(failed).toHaveLength(1)
          expect(failed[0]!.failure).toEqual(BROADCAST_CANCELLED_FAILURE)
          expect(failed[0]!.message_uuid).not.toBe(inFlight!.message.uuid)
          const events = yield* writtenEvents()
          expect(events.map((e) => [e.type, e.data.uuid])).toEqual([["message.status_updated", failed[0]!.message_uuid]])
          const rest = yield* broadcasts.audiencePage(org.id, broadcast.audience, page[1]!.uuid, 2)
          expect(yield* writePage(org.id, broadcast.uuid, start.lease, rest, { finished: true })).toBe(false)
          expect((yield* countsOf(org.id, broadcast.uuid)).total).toBe(2)
          const twice = yield* broadcasts.cancel(org.id, broadcast.uuid, BROADCAST_CANCELLED_FAILURE, at(30))
          expect(twice._tag).toBe("Refused")
          // A cancelled broadcast never completes.
          expect(yield* broadcasts.completeFinished(at(40))).toEqual([])
        })
      ))

    // More recipients than one batch of the stores that fail them in batches (SQLite 100,
    // PostgreSQL and MongoDB 1 000): every one failed, each announced exactly once.
    it.effect(`cancel and channels.delete of ${options.largeCaseSize ?? 2_500} waiting recipients (more than one batch): every one failed, one event each`, () =>
      run(
        Effect.gen(function* () {
          const { broadcasts, channels } = yield* Storage
          const size = options.largeCaseSize ?? 2_500
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const ids = yield* contacts(org.id, size)
          yield* addEndpoint(org.id, { events: ["message.status_updated"] })
          const cancelled = yield* createBroadcast(org.id, { contact_uuids: ids })
          const viaChannel = yield* createBroadcast(org.id, { contact_uuids: ids }, { channelUuid: channel.uuid })
          for (let started = 0; started < 2; started++) {
            const start = Option.getOrThrow(yield* claimStartAt(1))
            const broadcast = start.broadcast
            let cursor: ContactId | null = null
            for (;;) {
              const page: ReadonlyArray<Contact> = yield* broadcasts.audiencePage(org.id, broadcast.audience, cursor, 1_000)
              const finished = page.length < 1_000
              const written = yield* broadcasts.writeRecipients(org.id, broadcast.uuid, start.lease, {
                recipients: page.map((contact) => {
                  const write = recipientOf(broadcast.uuid, contact)
                  return { ...write, message: { ...write.message, channel_uuid: broadcast.channel_uuid } }
                }),
                cursor: page[page.length - 1]?.uuid ?? cursor,
                finished,
                leaseUntil: T0 + 1 + START_LEASE_MS,
                now: at(1)
              })
              expect(written).toBe(true)
              if (finished) break
              cursor = page[page.length - 1]!.uuid
            }
          }
          // Every delivery written so far, over as many claims as the store needs (a store may
          // hand out fewer than asked per claim: MongoDB relays its pending events in batches).
          const announced = () =>
            Effect.gen(function* () {
              const all: Array<readonly [string, string]> = []
              for (;;) {
                const deliveries = yield* claimDeliveries(EVENTS_AT, EVENTS_LEASE_UNTIL, 3 * size)
                if (deliveries.length === 0) return all
                all.push(...deliveries.map(({ event }) => [event.type, (event.data as { readonly uuid: string }).uuid] as const))
              }
            })
          const failedOf = (broadcast: { readonly uuid: BroadcastId }) =>
            Effect.gen(function* () {
              const failed: Array<string> = []
              let after: ContactId | null = null
              for (;;) {
                const page: ReadonlyArray<BroadcastRecipient> = yield* broadcasts.recipients(org.id, broadcast.uuid, { status: "failed", limit: 1_000, after })
                failed.push(...page.map((recipient) => recipient.message_uuid))
                if (page.length < 1_000) return failed.sort()
                after = page[page.length - 1]!.contact_uuid
              }
            })
          expect((yield* broadcasts.cancel(org.id, cancelled.uuid, BROADCAST_CANCELLED_FAILURE, at(20)))._tag).toBe("Done")
          expect((yield* countsOf(org.id, cancelled.uuid)).failed).toBe(size)
          const cancelEvents = yield* announced()
          expect(cancelEvents.every(([type]) => type === "message.status_updated")).toBe(true)
          expect(cancelEvents.map(([, uuid]) => uuid).sort()).toEqual(yield* failedOf(cancelled))
          expect(yield* channels.delete(org.id, channel.uuid)).toBe(true)
          expect((yield* countsOf(org.id, viaChannel.uuid)).failed).toBe(size)
          const deleteEvents = yield* announced()
          expect(deleteEvents.every(([type]) => type === "message.status_updated")).toBe(true)
          expect(deleteEvents.map(([, uuid]) => uuid).sort()).toEqual(yield* failedOf(viaChannel))
        })
      ), 120_000)

    it.effect("cancel of a scheduled broadcast: never started", () =>
      run(
        Effect.gen(function* () {
          const { broadcasts } = yield* Storage
          const org = yield* insertOrganization()
          const ids = yield* contacts(org.id, 1)
          const broadcast = yield* createBroadcast(org.id, { contact_uuids: ids }, { sendAt: at(5_000) })
          expect((yield* broadcasts.cancel(org.id, broadcast.uuid, BROADCAST_CANCELLED_FAILURE, at(1)))._tag).toBe("Done")
          expect(yield* claimStartAt(10_000)).toEqual(Option.none())
        })
      ))

    it.effect("stop: stopped with its reason, queued recipients failed with it; an ended broadcast is not stopped", () =>
      run(
        Effect.gen(function* () {
          const { broadcasts } = yield* Storage
          const org = yield* insertOrganization()
          const ids = yield* contacts(org.id, 2)
          const broadcast = yield* createBroadcast(org.id, { contact_uuids: ids })
          yield* startWhole(org.id, broadcast.uuid)
          const stopped = Option.getOrThrow(yield* broadcasts.stop(org.id, broadcast.uuid, STOPPED, at(50)))
          expect(stopped).toMatchObject({ status: "stopped", stopped_reason: STOPPED, completed_at: at(50) })
          expect(stopped.counts).toMatchObject({ total: 2, queued: 0, failed: 2 })
          const recipients = yield* broadcasts.recipients(org.id, broadcast.uuid, { status: null, limit: 10, after: null })
          expect(recipients.map((r) => r.failure)).toEqual([STOPPED, STOPPED])
          expect(yield* broadcasts.stop(org.id, broadcast.uuid, STOPPED, at(60))).toEqual(Option.none())
        })
      ))

    it.effect("completeFinished: only a sending broadcast whose start finished and none of whose recipients waits; completed once, with its event", () =>
      run(
        Effect.gen(function* () {
          const { broadcasts, outbox } = yield* Storage
          const org = yield* insertOrganization()
          const ids = yield* contacts(org.id, 2)
          yield* addEndpoint(org.id, { events: ["broadcast.completed"] })
          const broadcast = yield* createBroadcast(org.id, { contact_uuids: ids })
          expect(yield* broadcasts.completeFinished(at(2))).toEqual([])
          yield* startWhole(org.id, broadcast.uuid)
          expect(yield* broadcasts.completeFinished(at(3))).toEqual([])
          const claimed = yield* claimAt(10, { limit: 10 })
          expect(claimed).toHaveLength(2)
          yield* outbox.record(claimed[0]!.message.uuid, claimed[0]!.lease, { _tag: "Sent", provider_message_id: "wamid.1", attempts: 1 }, at(11))
          expect(yield* broadcasts.completeFinished(at(12))).toEqual([])
          yield* outbox.record(claimed[1]!.message.uuid, claimed[1]!.lease, { _tag: "Failed", failure: { code: "131026", title: "Undeliverable" }, attempts: 1 }, at(13))
          const [completed, ...more] = yield* broadcasts.completeFinished(at(14))
          expect(more).toEqual([])
          expect(completed).toMatchObject({ uuid: broadcast.uuid, status: "completed", completed_at: at(14) })
          expect(completed!.counts).toEqual({ total: 2, queued: 0, sending: 0, sent: 1, delivered: 0, read: 0, failed: 1 })
          expect(yield* broadcasts.completeFinished(at(15))).toEqual([])
          const events = yield* writtenEvents()
          expect(events.map((e) => [e.type, e.data.uuid])).toEqual([["broadcast.completed", broadcast.uuid]])
          expect(events[0]!.data).toMatchObject({ status: "completed", counts: { sent: 1, failed: 1 } })
          // A broadcast whose every recipient was skipped completes too.
          const skippedOnly = yield* createBroadcast(org.id, { contact_uuids: ids }, { now: at(20) })
          yield* startWhole(org.id, skippedOnly.uuid, () => OPTED_OUT)
          const [done] = yield* broadcasts.completeFinished(at(21))
          expect(done).toMatchObject({ uuid: skippedOnly.uuid, counts: { total: 2, failed: 2 } })
        })
      ))
  })

  describe("contacts: marketing opt-out", () => {
    it.effect("markMarketingOptOut keeps the first time; a PUT with null clears it; another organization's contact is not marked", () =>
      run(
        Effect.gen(function* () {
          const { contacts: contactRepository } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const [id] = yield* contacts(org.id, 1)
          expect(Option.getOrThrow(yield* contactRepository.findById(org.id, id!)).marketing_opt_out_at).toBeNull()
          expect(yield* contactRepository.markMarketingOptOut(other.id, id!, at(1))).toBe(false)
          expect(yield* contactRepository.markMarketingOptOut(org.id, id!, at(1))).toBe(true)
          expect(yield* contactRepository.markMarketingOptOut(org.id, id!, at(2))).toBe(false)
          const marked = Option.getOrThrow(yield* contactRepository.findById(org.id, id!))
          expect(marked.marketing_opt_out_at).toBe(at(1))
          const listed = yield* contactRepository.list(org.id, { page: 1, per_page: 10 })
          expect(listed.items[0]!.marketing_opt_out_at).toBe(at(1))
          const kept = yield* contactRepository.update(org.id, id!, { details: { first_name: "Grace" } }, at(3))
          expect(kept._tag === "Updated" && kept.contact.marketing_opt_out_at).toBe(at(1))
          const cleared = yield* contactRepository.update(org.id, id!, { details: {}, marketing_opt_out_at: null }, at(4))
          expect(cleared._tag === "Updated" && cleared.contact.marketing_opt_out_at).toBeNull()
          expect(yield* contactRepository.markMarketingOptOut(org.id, fixtures.uuid() as ContactId, at(5))).toBe(false)
        })
      ))
  })

  if (shared !== undefined) {
    describe("broadcasts: two stores over one", () => {
      it.effect("of two stores claiming one due start together, one gets it", () =>
        shared((first, second) =>
          Effect.gen(function* () {
            const org = yield* insertOrganization()
            const ids = yield* contacts(org.id, 1)
            yield* createBroadcast(org.id, { contact_uuids: ids })
            const claims = yield* Effect.all(
              [first, second, first, second].map((store, i) =>
                store.broadcasts.claimStart({ now: T0 + 5, lease: `lease-${i}`, leaseUntil: T0 + 5 + START_LEASE_MS })
              ),
              { concurrency: "unbounded" }
            )
            expect(claims.filter(Option.isSome)).toHaveLength(1)
          })
        ))
    })
  }
}
