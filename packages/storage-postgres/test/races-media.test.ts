import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { afterAll, beforeAll, describe } from "vitest"
import type { ChatAppendRequest, OrganizationId } from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { PostgresStorage } from "@switchboard/storage-postgres"
import { inboundText, organizationWithSenders } from "./provider-reports.js"
import { postgresUrl, skipWithoutPostgres, testSchemas, twoStores } from "./support.js"

const { instant, phone } = fixtures

// An inbound media message's record and fetch job are written with the message by every
// append path (repositories/chatAppend.ts: a new sender's or a contact's without a chat
// under the organization's lock, a sender's with a chat by one autocommit statement or, with
// an endpoint subscribed, under the chat's lock; each with and without the customer service
// window), once however many times Meta delivers it at once; and the stored-bytes limit
// holds for writers of one organization in two stores at once. One schema for the file,
// emptied before each test, dropped at the end.
const schemas = testSchemas()
const schema = schemas.fresh()

const CHANNEL = fixtures.uuid()

/** An inbound image `wamid` from `from` through {@link CHANNEL}, with its media record and job (a new media uuid each delivery, as core makes them). */
const inboundImage = (from: string, wamid: string, now: string, window: boolean): ChatAppendRequest => {
  const text = inboundText(from, wamid, now)
  const media = fixtures.inboundMedia(CHANNEL, 1)
  const { uuid, type, mime_type, status, failure } = media
  return {
    ...text,
    message: {
      ...text.message,
      type,
      text: null,
      channel_uuid: CHANNEL,
      media: { type, id: media.fetch!.provider_media_id, mime_type, media_uuid: uuid, status, failure }
    },
    ...(window ? { inboundAt: now } : {}),
    media
  }
}

/**
 * Per stored message of `org`: its wamid, its media records, their fetch jobs, and those of
 * them the message names (uuid and provider id) of its contact and channel; and the
 * organization's media records in all.
 */
const mediaOfMessages = (org: OrganizationId) =>
  Effect.promise(async () => {
    const { rows } = await schemas.pool().query<{ wamid: string; media: string; jobs: string; matching: string }>(
      `SELECT m.provider_message_id AS wamid, COUNT(md.uuid) AS media, COUNT(md.next_fetch_at) AS jobs,
          COUNT(md.uuid) FILTER (WHERE md.contact_uuid = m.contact_uuid AND md.provider_media_id = m.media->>'id'
            AND md.uuid = m.media->>'media_uuid' AND md.channel_uuid = $2) AS matching
        FROM "${schema}".messages AS m LEFT JOIN "${schema}".media AS md ON md.message_uuid = m.uuid
        WHERE m.organization_id = $1 GROUP BY m.provider_message_id ORDER BY m.provider_message_id`,
      [org, CHANNEL]
    )
    const total = await schemas.pool().query<{ count: string }>(`SELECT COUNT(*) AS count FROM "${schema}".media WHERE organization_id = $1`, [org])
    return { messages: rows.map((row) => [row.wamid, Number(row.media), Number(row.jobs), Number(row.matching)]), total: Number(total.rows[0]!.count) }
  })

describe.skipIf(skipWithoutPostgres)("PostgreSQL server at POSTGRES_URL: races on media", () => {
  beforeAll(() => Effect.runPromise(Effect.scoped(PostgresStorage.make({ connectionString: postgresUrl!, schema }))))
  afterAll(schemas.drop)

  for (const subscribed of [true, false]) {
    for (const window of [true, false]) {
      it.live(
        `an inbound image delivered four times at once from two stores, by senders with a chat, without one and new, ${subscribed ? "an endpoint subscribed" : "no endpoint"}, ${window ? "with" : "without"} the window: one media record and one job, with its message`,
        () =>
          Effect.scoped(
            Effect.gen(function* () {
              const stores = yield* twoStores(schemas, schema)
              // Phones 0-3: contacts with a chat; 4-5: contacts without one; 6-7: new senders.
              const org = yield* organizationWithSenders(stores[0], 4, 2, subscribed)
              const deliveries = Array.from({ length: 8 }, (_, i) =>
                [0, 1, 2, 3].map((n) => ({ store: stores[n % 2]!, request: inboundImage(phone(i), `wamid.${i}`, instant(1), window) }))
              ).flat()
              const outcomes = yield* Effect.all(
                deliveries.map(({ store, request }) => store.chats.appendMessage(org, request)),
                { concurrency: "unbounded" }
              )
              expect(outcomes.filter((outcome) => outcome._tag === "Appended")).toHaveLength(8)
              const stored = yield* mediaOfMessages(org)
              expect(stored.messages).toEqual(Array.from({ length: 8 }, (_, i) => [`wamid.${i}`, 1, 1, 1]))
              expect(stored.total).toBe(8)
              // The jobs are claimable, one each.
              const jobs = yield* stores[1].media.claimFetches(instant(2), instant(3), 100)
              expect(jobs).toHaveLength(8)
            })
          ),
        30_000
      )
    }
  }

  it.live("uploads and a fetch storing its bytes in one organization at once, from two stores: the stored bytes never pass the limit", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stores = yield* twoStores(schemas, schema)
        const org = yield* organizationWithSenders(stores[0], 1, 0, false)
        yield* stores[0].chats.appendMessage(org, inboundImage(phone(0), "wamid.photo", instant(1), false))
        const [job] = yield* stores[0].media.claimFetches(instant(2), instant(30), 1)
        const limit = 1_000
        const stored = { _tag: "Stored", blob_key: "media/photo", size: 300, sha256: "b".repeat(64), mime_type: null, bytesLimit: limit } as const
        const [recorded, ...inserted] = yield* Effect.all(
          [
            stores[1].media.recordFetch(job!.media.uuid, job!.lease, stored, instant(3)).pipe(
              Effect.map((outcome) => (outcome._tag === "Settled" ? outcome.media.status : outcome._tag))
            ),
            ...Array.from({ length: 6 }, (_, n) =>
              stores[n % 2]!.media.insert(org, fixtures.mediaUpload(1, { size: 300 }), limit).pipe(Effect.map((outcome) => (outcome._tag === "Inserted" ? "stored" : outcome._tag)))
            )
          ],
          { concurrency: "unbounded" }
        )
        const statuses = [recorded, ...inserted]
        expect(statuses.filter((status) => status === "stored")).toHaveLength(3)
        expect(statuses.filter((status) => status === "failed" || status === "LimitReached")).toHaveLength(4)
        expect(yield* stores[0].media.bytesUsed(org)).toBe(900)
      })
    ))
})
