import { expect } from "@effect/vitest"
import { Effect } from "effect"
import type Pg from "pg"
import {
  type ChatAppendRequest,
  type ChatId,
  type ContactId,
  MESSAGE_STATUS_PREDECESSORS,
  type MessageId,
  type MessageStatus,
  type OrganizationId,
  type StorageService,
  type WebhookEndpointId
} from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"

// What the tests of Meta's webhooks on the store share (races-statuses.test.ts,
// races-inbound.test.ts, round-trips.test.ts): sent messages to report on, an endpoint
// subscribed to every event, the report as core makes it, the events it wrote, and an
// inbound text as core appends it.

const { importRow, instant, phone } = fixtures

/** Inserts an enabled endpoint subscribed to every event into `org`; resolves its uuid. */
export const subscribedEndpoint = (store: StorageService, org: OrganizationId) =>
  Effect.gen(function* () {
    const endpoint = {
      uuid: fixtures.uuid() as WebhookEndpointId,
      url: "https://example.com/hooks",
      events: null,
      description: null,
      enabled: true,
      created_at: instant(0),
      updated_at: instant(0)
    }
    expect((yield* store.webhooks.insertEndpoint(org, { endpoint, secret_sealed: "sealed" }, 10))._tag).toBe("Inserted")
    return endpoint.uuid
  })

/**
 * A new organization (with a subscribed endpoint when `subscribed`) and `count` outbound
 * messages, one per contact, sent as `wamid.<i>` at `instant(1)`; resolves the
 * organization, the messages' uuids and the endpoint's uuid (`null` without one).
 */
export const sentMessages = (store: StorageService, count: number, options: { readonly subscribed: boolean }) =>
  Effect.gen(function* () {
    const org = fixtures.organization()
    yield* store.organizations.insert(org)
    const endpoint = options.subscribed ? yield* subscribedEndpoint(store, org.id) : null
    const imported = yield* store.contacts.importBulk(
      org.id,
      fixtures.importRequest(Array.from({ length: count }, (_, i) => importRow(phone(i))))
    )
    if (imported._tag !== "Imported") return expect.fail(`expected Imported, got ${imported._tag}`)
    const ids: Array<MessageId> = []
    for (const [i, contact] of imported.result.contacts.entries()) {
      const id = fixtures.uuid() as MessageId
      const appended = yield* store.chats.appendMessage(org.id, outboundText(contact.uuid, id))
      expect(appended._tag).toBe("Appended")
      const sent = yield* store.chats.updateMessageStatus(org.id, id, {
        status: "sent",
        from: MESSAGE_STATUS_PREDECESSORS.sent,
        provider_message_id: `wamid.${i}`,
        now: instant(1)
      })
      expect(sent._tag).toBe("Updated")
      ids.push(id)
    }
    return { org: org.id, ids, endpoint }
  })

/**
 * A new organization and `count` outbound messages in the send queue, one per contact,
 * each claimed at its append under `lease` (due again long after `instant(0)`); resolves
 * the organization and the messages' uuids.
 */
export const leasedMessages = (store: StorageService, count: number, lease: string) =>
  Effect.gen(function* () {
    const org = fixtures.organization()
    yield* store.organizations.insert(org)
    const imported = yield* store.contacts.importBulk(
      org.id,
      fixtures.importRequest(Array.from({ length: count }, (_, i) => importRow(phone(i))))
    )
    if (imported._tag !== "Imported") return expect.fail(`expected Imported, got ${imported._tag}`)
    const ids: Array<MessageId> = []
    for (const [i, contact] of imported.result.contacts.entries()) {
      const id = fixtures.uuid() as MessageId
      const now = Date.parse(instant(0))
      const appended = yield* store.chats.appendMessage(org.id, {
        ...outboundText(contact.uuid, id),
        outbox: { to: phone(i), class: "single", expires_at: instant(10_000), claim: { lease, leaseUntil: now + 60_000, settleMs: 60_000, bypass: false } }
      })
      expect(appended._tag).toBe("Appended")
      ids.push(id)
    }
    return { org: org.id, ids }
  })

/**
 * A new organization with `channels` channels (`throughput_mps` 50) and `perChannel`
 * outbound texts queued on each, one per contact, never claimed, due at `instant(0)`;
 * resolves the organization.
 */
export const queuedOnChannels = (store: StorageService, channels: number, perChannel: number) =>
  Effect.gen(function* () {
    const org = fixtures.organization()
    yield* store.organizations.insert(org)
    const channelIds: Array<string> = []
    for (let index = 0; index < channels; index++) {
      const channel = fixtures.channelRecord()
      expect((yield* store.channels.insert(org.id, { channel, access_token_sealed: "sealed" }, 100))._tag).toBe("Inserted")
      channelIds.push(channel.uuid)
    }
    const imported = yield* store.contacts.importBulk(
      org.id,
      fixtures.importRequest(Array.from({ length: channels * perChannel }, (_, i) => importRow(phone(i))))
    )
    if (imported._tag !== "Imported") return expect.fail(`expected Imported, got ${imported._tag}`)
    for (const [i, contact] of imported.result.contacts.entries()) {
      const request = outboundText(contact.uuid, fixtures.uuid() as MessageId)
      const appended = yield* store.chats.appendMessage(org.id, {
        ...request,
        message: { ...request.message, channel_uuid: channelIds[i % channels]!, transport: "whatsapp" as const },
        outbox: { to: phone(i), class: "single", expires_at: instant(10_000), claim: null }
      })
      expect(appended._tag).toBe("Appended")
    }
    return org.id
  })

/** The request appending a queued outbound text `id` to the contact's chat at `instant(0)`. */
const outboundText = (contactId: ContactId, id: MessageId) => ({
  contact: { _tag: "ById" as const, uuid: contactId },
  newChat: { uuid: fixtures.uuid() as ChatId, status: "open" as const },
  message: {
    uuid: id,
    direction: "outbound" as const,
    type: "text" as const,
    text: "hello",
    template: null,
    media: null,
    content: null,
    status: "queued" as const,
    provider_message_id: null,
    failure: null,
    channel_uuid: null,
    transport: "recording" as const,
    attempts: 0,
    next_attempt_at: null,
    broadcast_uuid: null,
    reply_to: null,
    reactions: [],
    created_at: instant(0),
    updated_at: instant(0)
  },
  unreadIncrement: 0,
  reopen: { from: [], to: "open" as const },
  dedupe: false,
  now: instant(0)
})

/** A provider report of `status` for `wamid` at `now`, as core makes it (`failed` with Meta's 131047). */
export const providerReport = (store: StorageService, org: OrganizationId, wamid: string, status: MessageStatus, now: string) =>
  store.chats.updateMessageStatusByProviderId(org, wamid, {
    status,
    from: MESSAGE_STATUS_PREDECESSORS[status],
    ...(status === "failed" ? { failure: { code: "131047", title: "Re-engagement message" } } : {}),
    now,
    pendingUntil: instant(60)
  })

/** The statuses of the `message.status_updated` events of message `id` written after `instant(1)` (its send), by `created_at`. */
export const eventStatuses = (pool: Pg.Pool, schema: string, id: MessageId) =>
  Effect.promise(async () => {
    const rows = await pool.query<{ status: string }>(
      `SELECT data->>'status' AS status FROM "${schema}".webhook_events
        WHERE type = 'message.status_updated' AND data->>'uuid' = $1 AND created_at > $2 ORDER BY created_at`,
      [id, instant(1)]
    )
    return rows.rows.map((row) => row.status)
  })

/** The request core makes for an inbound text `wamid` from `from` (`ByPhone`, deduplicated, with no channel). */
export const inboundText = (from: string, wamid: string, now: string): ChatAppendRequest => ({
  contact: {
    _tag: "ByPhone",
    phone: from,
    create: { uuid: fixtures.uuid() as ContactId, first_name: "Ada", last_name: null, phone_valid: true }
  },
  newChat: { uuid: fixtures.uuid() as ChatId, status: "open" },
  message: {
    uuid: fixtures.uuid() as MessageId,
    direction: "inbound",
    type: "text",
    text: `text of ${wamid}`,
    template: null,
    media: null,
    content: { timestamp: null },
    status: "delivered",
    provider_message_id: wamid,
    failure: null,
    channel_uuid: null,
    transport: null,
    attempts: 0,
    next_attempt_at: null,
    broadcast_uuid: null,
    reply_to: null,
    reactions: [],
    created_at: now,
    updated_at: now
  },
  unreadIncrement: 1,
  reopen: { from: ["resolved", "closed"], to: "open" },
  dedupe: true,
  now
})

/**
 * A new organization with an endpoint subscribed to every event (none when not
 * `subscribed`), `withChat` contacts with
 * a chat (phones 0…) and `withoutChat` contacts without one (the phones after them).
 */
export const organizationWithSenders = (store: StorageService, withChat: number, withoutChat: number, subscribed = true) =>
  Effect.gen(function* () {
    const org = fixtures.organization()
    yield* store.organizations.insert(org)
    if (subscribed) yield* subscribedEndpoint(store, org.id)
    const rows = Array.from({ length: withChat + withoutChat }, (_, i) => importRow(phone(i)))
    const imported = yield* store.contacts.importBulk(org.id, fixtures.importRequest(rows))
    if (imported._tag !== "Imported") return expect.fail(`expected Imported, got ${imported._tag}`)
    for (const contact of imported.result.contacts.slice(0, withChat)) {
      const ensured = yield* store.chats.ensure(org.id, contact.uuid, { uuid: fixtures.uuid() as ChatId, status: "open" }, instant(0))
      expect(ensured._tag).toBe("Ensured")
    }
    return org.id
  })
