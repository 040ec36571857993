import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { afterAll, beforeAll, describe } from "vitest"
import {
  type Channel,
  type ChatId,
  type ClaimedMessage,
  type ContactId,
  MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION,
  type MessageId,
  type OrganizationId,
  pacingIntervalMs,
  type StorageService,
  type WebhookEndpointId
} from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { PostgresStorage } from "@switchboard/storage-postgres"
import { postgresUrl, skipWithoutPostgres, testSchemas, twoStores } from "./support.js"

const { importRow, instant, phone } = fixtures

// Claims racing between two stores (two pools) on one schema, as two processes would have
// them: many small claims at once from both never hand one webhook delivery or one queued
// message to two claimants, and a channel's pacing holds across both. One schema for the
// file, emptied before each test, dropped at the end.
const schemas = testSchemas()
const schema = schemas.fresh()

/** Two stores on the file's schema, emptied first; released with the test's scope. */
const freshStores = twoStores(schemas, schema)

/** `first` for even `i`, `second` for odd. */
const either = (stores: readonly [StorageService, StorageService], i: number) => stores[i % 2]!

/** An organization with `contacts` new contacts (`phone(0)`, `phone(1)`, …); their uuids in phone order. */
const organizationWithContacts = (store: StorageService, contacts: number) =>
  Effect.gen(function* () {
    const org = fixtures.organization({ plan: { contacts_limit: null, label_limit: null, media_bytes_limit: null, api_access: true } })
    yield* store.organizations.insert(org)
    const imported = yield* store.contacts.importBulk(
      org.id,
      fixtures.importRequest(Array.from({ length: contacts }, (_, i) => importRow(phone(i))))
    )
    if (imported._tag !== "Imported") return expect.fail(`expected Imported, got ${imported._tag}`)
    const byPhone = new Map(imported.result.contacts.map((contact) => [contact.phone, contact.uuid]))
    return { org, contacts: Array.from({ length: contacts }, (_, i) => byPhone.get(phone(i))! as ContactId) }
  })

/** The epoch ms of `instant(0)`: the origin of the send queue's times here. */
const T0 = Date.parse(instant(0))

describe.skipIf(skipWithoutPostgres)("PostgreSQL server at POSTGRES_URL: races on claims", () => {
  beforeAll(() => Effect.runPromise(Effect.scoped(PostgresStorage.make({ connectionString: postgresUrl!, schema }))))
  afterAll(schemas.drop)

  it.effect("200 due webhook deliveries claimed by many small claims from two stores at once: each exactly once", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stores = yield* freshStores
        // Two endpoints and 100 created contacts: 200 deliveries, due at instant(0).
        const org = fixtures.organization({ plan: { contacts_limit: null, label_limit: null, media_bytes_limit: null, api_access: true } })
        yield* stores[0].organizations.insert(org)
        for (let n = 0; n < 2; n++) {
          const outcome = yield* stores[n]!.webhooks.insertEndpoint(
            org.id,
            {
              endpoint: {
                uuid: fixtures.uuid() as WebhookEndpointId,
                url: `https://example.com/hooks/${n}`,
                events: null,
                description: null,
                enabled: true,
                created_at: instant(0),
                updated_at: instant(0)
              },
              secret_sealed: "sealed"
            },
            MAX_WEBHOOK_ENDPOINTS_PER_ORGANIZATION
          )
          expect(outcome._tag).toBe("Inserted")
        }
        yield* stores[1].contacts.importBulk(
          org.id,
          fixtures.importRequest(Array.from({ length: 100 }, (_, i) => importRow(phone(i))))
        )
        const claimed: Array<string> = []
        for (let round = 0; round < 20; round++) {
          const batches = yield* Effect.all(
            Array.from({ length: 40 }, (_, i) => either(stores, i).webhooks.claimDue(instant(1), instant(2), 3)),
            { concurrency: "unbounded" }
          )
          const ids = batches.flat().map((delivery) => delivery.delivery_id)
          claimed.push(...ids)
          if (ids.length === 0) break
        }
        expect(claimed).toHaveLength(200)
        expect(new Set(claimed).size).toBe(200)
        // Every lease still holds: nothing is due again before it ends.
        expect(yield* stores[0].webhooks.claimDue(instant(1), instant(2), 500)).toEqual([])
      })
    ))

  it.effect("300 queued messages over four channels claimed by concurrent claims from two stores: each exactly once, pacing kept", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stores = yield* freshStores
        const { contacts, org } = yield* organizationWithContacts(stores[0], 150)
        const channels: Array<Channel> = []
        for (const [n, throughput] of [[1, 10], [2, 20], [3, 40], [4, 100]] as const) {
          const channel = fixtures.channelRecord({ throughput_mps: throughput, created_at: instant(n), updated_at: instant(n) })
          const outcome = yield* stores[0].channels.insert(org.id, { channel, access_token_sealed: "v1.sealed" }, 20)
          expect(outcome._tag).toBe("Inserted")
          channels.push(channel)
        }
        // 300 messages: contact i gets two (one per pass), through channel i % 4: lanes of
        // two messages, so a lane's second is claimable only once its first is recorded.
        const now0 = new Date(T0).toISOString()
        for (let pass = 0; pass < 2; pass++) {
          yield* Effect.all(
            contacts.map((contactId, i) =>
              either(stores, i).chats.appendMessage(org.id, {
                contact: { _tag: "ById", uuid: contactId },
                newChat: { uuid: fixtures.uuid() as ChatId, status: "open" },
                message: {
                  uuid: fixtures.uuid() as MessageId,
                  direction: "outbound",
                  type: "text",
                  text: `pass ${pass} to ${i}`,
                  template: null,
                  media: null,
                  content: null,
                  status: "queued",
                  provider_message_id: null,
                  failure: null,
                  channel_uuid: channels[i % 4]!.uuid,
                  transport: "whatsapp",
                  attempts: 0,
                  next_attempt_at: null,
                  broadcast_uuid: null,
                  reply_to: null,
                  reactions: [],
                  created_at: now0,
                  updated_at: now0
                },
                unreadIncrement: 0,
                reopen: { from: [], to: "open" },
                dedupe: false,
                now: now0,
                outbox: { to: phone(i), class: "single", expires_at: instant(10_000), claim: null }
              })
            ),
            { concurrency: 10 }
          )
        }
        const claimed: Array<ClaimedMessage> = []
        for (let second = 0; second < 60 && claimed.length < 300; second++) {
          const now = T0 + second * 1_000
          const batches = yield* Effect.all(
            Array.from({ length: 12 }, (_, i) =>
              either(stores, i).outbox.claim({
                now,
                lease: `lease-${second}-${i}`,
                leaseUntil: now + 30_000,
                settleMs: 60_000,
                limit: 8,
                horizonMs: 1_000
              }).pipe(Effect.map((messages) => messages.map((message) => ({ message, store: i % 2 }))))
            ),
            { concurrency: "unbounded" }
          )
          const round = batches.flat()
          claimed.push(...round.map(({ message }) => message))
          // Each claimant records its messages sent, so the lanes' second messages become heads.
          yield* Effect.all(
            round.map(({ message, store }) =>
              stores[store]!.outbox.record(
                message.message.uuid,
                message.lease,
                { _tag: "Sent", provider_message_id: `wamid.${message.message.uuid}`, attempts: 1 },
                new Date(now).toISOString()
              ).pipe(Effect.tap((recorded) => expect(recorded._tag).toBe("Some")))
            ),
            { concurrency: 10 }
          )
        }
        const uuids = claimed.map((message) => message.message.uuid)
        expect(uuids).toHaveLength(300)
        expect(new Set(uuids).size).toBe(300)
        for (const [k, channel] of channels.entries()) {
          const slots = claimed
            .filter((message) => message.message.channel_uuid === channel.uuid)
            .map((message) => message.not_before)
            .sort((a, b) => a - b)
          expect(slots).toHaveLength(2 * contacts.filter((_, i) => i % 4 === k).length)
          // Slots are epoch ms in doubles: near 1.77e12 their resolution is 2^-12 ms, hence the 0.001 ms leeway.
          const interval = pacingIntervalMs(channel.throughput_mps)
          for (let n = 1; n < slots.length; n++) expect(slots[n]! - slots[n - 1]!).toBeGreaterThanOrEqual(interval - 0.001)
          // No sliding one-second window holds more than throughput_mps slots.
          for (let n = 0; n + channel.throughput_mps < slots.length; n++) {
            expect(slots[n + channel.throughput_mps]! - slots[n]!).toBeGreaterThanOrEqual(1_000 - 0.001)
          }
        }
        const organizationId: OrganizationId = org.id
        expect((yield* stores[1].outbox.channelQueue(organizationId, channels[0]!.uuid)).queued).toBe(0)
      })
    ), 60_000)
})
