import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import {
  type ContactId,
  mediaFailure,
  mediaRecordOf,
  type NewInboundMedia,
  type NewMedia,
  type OrganizationId,
  Storage,
  type StoredMedia
} from "@switchboard/core"
import { inboundRequest } from "./chat-support.js"
import type { StorageContractOptions } from "./options.js"
import * as fixtures from "./fixtures.js"
import { insertChannel, insertOrganization, runner, sharedRunner, sorted } from "./support.js"
import { addEndpoint, onlyEvent, outbox } from "./webhook-support.js"

const { instant } = fixtures

/** An uploaded media record (`stored`), created at `minutes`; `overrides` replace fields. */
const upload = fixtures.mediaUpload

/** The media of an inbound image through `channelUuid`, due at `minutes`. */
const inboundMedia = fixtures.inboundMedia

/** Inserts an uploaded media (no limit) and expects it inserted; returns it as stored. */
const insertUpload = (organizationId: OrganizationId, media: NewMedia) =>
  Effect.gen(function* () {
    const outcome = yield* (yield* Storage).media.insert(organizationId, media, null)
    if (outcome._tag !== "Inserted") return expect.fail(`expected Inserted, got ${outcome._tag}`)
    return outcome.media
  })

/** The `media` object of the message that carries `media`. */
const withMessageMedia = (media: NewInboundMedia) => ({
  type: media.type,
  id: media.fetch?.provider_media_id ?? "none",
  mime_type: media.mime_type,
  media_uuid: media.uuid,
  status: media.status,
  failure: media.failure
})

/** Appends an inbound image message whose record's `media` names `media`; returns the outcome. */
const receive = (organizationId: OrganizationId, phone: string, channelUuid: string, media: NewInboundMedia, providerId?: string) =>
  Effect.gen(function* () {
    const { chats } = yield* Storage
    const request = inboundRequest(phone, { now: media.created_at, channelUuid, providerId: providerId ?? `wamid.${media.uuid}` })
    return yield* chats.appendMessage(organizationId, {
      ...request,
      message: { ...request.message, type: "image", text: null, media: withMessageMedia(media) },
      media
    })
  })

const claim = (minutes: number, limit = 10, leaseMinutes = 1) =>
  Effect.flatMap(Storage, ({ media }) => media.claimFetches(instant(minutes), instant(minutes + leaseMinutes), limit))

/**
 * Contract of `Storage.media` (docs/media.md): records round-trip (sizes past 2^32
 * included), the stored-bytes limit is checked in the insert's step, pages are newest first
 * by cursor, an inbound media and its fetch job are written with their message (one job for
 * a redelivered one), fetch jobs are leased to one caller, renewed, retried and settled by
 * the lease holder only, a settled media rewrites its message's `media` with the
 * `message.media_updated` event, deletion keeps the record and hands its blob out for
 * removal, a contact's deletion ends its media, and provider upload ids lapse.
 */
export const mediaContract = (options: StorageContractOptions): void => {
  const run = runner(options)
  const runShared = sharedRunner(options)

  describe("media", () => {
    it.effect("insert then get: every field as written; another organization's get is none; getForLink finds it by uuid alone", () =>
      run(
        Effect.gen(function* () {
          const { media } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const written = upload(1, { size: 5_000_000_123, filename: "ünïcødé \"quoted\".pdf" })
          const stored = yield* insertUpload(org.id, written)
          expect(stored).toEqual({
            ...mediaRecordOf({ ...stored }),
            organization_id: org.id,
            contact_uuid: null,
            channel_uuid: null,
            blob_key: written.blob_key,
            blob_pending_removal: false
          })
          expect(mediaRecordOf(stored)).toEqual({
            uuid: written.uuid,
            type: "document",
            mime_type: "application/pdf",
            size: 5_000_000_123,
            sha256: "a".repeat(64),
            filename: "ünïcødé \"quoted\".pdf",
            status: "stored",
            failure: null,
            source: "upload",
            message_uuid: null,
            created_at: instant(1),
            stored_at: instant(1)
          })
          expect(yield* media.get(org.id, written.uuid)).toEqual(Option.some(stored))
          expect(yield* media.get(other.id, written.uuid)).toEqual(Option.none())
          expect(yield* media.getForLink(written.uuid)).toEqual(Option.some(stored))
          expect(yield* media.getForLink(fixtures.uuid())).toEqual(Option.none())
        })
      ))

    it.effect("bytesLimit: an upload that would pass it is LimitReached and writes nothing; bytesUsed counts stored media only, per organization", () =>
      run(
        Effect.gen(function* () {
          const { media } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          expect(yield* media.bytesUsed(org.id)).toBe(0)
          yield* insertUpload(org.id, upload(1, { size: 600 }))
          yield* insertUpload(other.id, upload(1, { size: 10_000 }))
          const over = upload(2, { size: 401 })
          expect(yield* media.insert(org.id, over, 1_000)).toEqual({ _tag: "LimitReached", used: 600, limit: 1_000 })
          expect(yield* media.get(org.id, over.uuid)).toEqual(Option.none())
          const fits = upload(2, { size: 400 })
          expect((yield* media.insert(org.id, fits, 1_000))._tag).toBe("Inserted")
          expect(yield* media.bytesUsed(org.id)).toBe(1_000)
          yield* media.markDeleted(org.id, fits.uuid, instant(3))
          expect(yield* media.bytesUsed(org.id)).toBe(600)
          expect(yield* media.bytesUsed(other.id)).toBe(10_000)
        })
      ))

    it.effect("insert of a uuid the organization has is Duplicate with that record, before the limit, writing nothing", () =>
      run(
        Effect.gen(function* () {
          const { media } = yield* Storage
          const org = yield* insertOrganization()
          // The first writer of a held uuid (an Idempotency-Key's), then the second, at the limit.
          const first = yield* insertUpload(org.id, upload(1, { size: 600 }))
          const again = upload(2, { uuid: first.uuid, blob_key: first.blob_key, size: 600 })
          expect(yield* media.insert(org.id, again, 1_000)).toEqual({ _tag: "Duplicate", media: first })
          expect(yield* media.insert(org.id, again, null)).toEqual({ _tag: "Duplicate", media: first })
          expect(yield* media.get(org.id, first.uuid)).toEqual(Option.some(first))
          expect(yield* media.bytesUsed(org.id)).toBe(600)
          expect((yield* media.list(org.id, {}, { per_page: 10 })).items).toEqual([first])
        })
      ))

    it.effect("list: newest first (created_at desc, uuid desc), after a cursor, filtered by source and status, one organization's", () =>
      run(
        Effect.gen(function* () {
          const { media } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const a = yield* insertUpload(org.id, upload(1))
          const [b, c] = [upload(2), upload(2)].sort((x, y) => (x.uuid < y.uuid ? 1 : -1))
          const bStored = yield* insertUpload(org.id, b!)
          const cStored = yield* insertUpload(org.id, c!)
          const d = yield* insertUpload(org.id, upload(3))
          yield* insertUpload(other.id, upload(4))
          yield* media.markDeleted(org.id, a.uuid, instant(5))
          const first = yield* media.list(org.id, {}, { per_page: 2 })
          expect(first.items.map((item) => item.uuid)).toEqual([d.uuid, bStored.uuid])
          expect(first.hasMore).toBe(true)
          const second = yield* media.list(org.id, {}, { per_page: 2, after: bStored.uuid })
          expect(second.items.map((item) => item.uuid)).toEqual([cStored.uuid, a.uuid])
          expect(second.hasMore).toBe(false)
          expect((yield* media.list(org.id, { status: "deleted" }, { per_page: 10 })).items.map((item) => item.uuid)).toEqual([a.uuid])
          expect((yield* media.list(org.id, { source: "inbound" }, { per_page: 10 })).items).toEqual([])
          expect((yield* media.list(org.id, { source: "upload", status: "stored" }, { per_page: 10 })).items.length).toBe(3)
          expect(second.items[1]!.status).toBe("deleted")
        })
      ))

    it.effect("an inbound media is written with its message (message_uuid, contact_uuid, channel_uuid) and its job claimable; a redelivery writes no second job", () =>
      run(
        Effect.gen(function* () {
          const { media } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const incoming = inboundMedia(channel.uuid, 1)
          const outcome = yield* receive(org.id, fixtures.phone(1), channel.uuid, incoming, "wamid.photo")
          if (outcome._tag !== "Appended") return expect.fail(`expected Appended, got ${outcome._tag}`)
          expect(outcome.message.media).toEqual(withMessageMedia(incoming))
          const stored = Option.getOrThrow(yield* media.get(org.id, incoming.uuid))
          expect(stored).toMatchObject({
            status: "pending",
            source: "inbound",
            message_uuid: outcome.message.uuid,
            contact_uuid: outcome.message.contact_uuid,
            channel_uuid: channel.uuid,
            blob_key: null,
            size: null
          })
          const again = yield* receive(org.id, fixtures.phone(1), channel.uuid, { ...inboundMedia(channel.uuid, 1) }, "wamid.photo")
          expect(again._tag).toBe("Duplicate")
          const jobs = yield* claim(2)
          expect(jobs.map((job) => job.media.uuid)).toEqual([incoming.uuid])
          expect(jobs[0]).toMatchObject({
            channel_uuid: channel.uuid,
            provider_media_id: incoming.fetch!.provider_media_id,
            declared_sha256: incoming.fetch!.declared_sha256,
            expires_at: incoming.fetch!.expires_at,
            attempts: 0,
            integrity_failures: 0
          })
          expect(jobs[0]!.media).toEqual(stored)
        })
      ))

    it.effect("claimFetches: due jobs only, earliest first, up to the limit, each leased once until its lease ends; nextFetchDueAt follows", () =>
      run(
        Effect.gen(function* () {
          const { media } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          expect(yield* media.nextFetchDueAt()).toEqual(Option.none())
          const late = inboundMedia(channel.uuid, 5)
          const early = inboundMedia(channel.uuid, 2)
          const middle = inboundMedia(channel.uuid, 3)
          for (const [n, each] of [late, early, middle].entries()) yield* receive(org.id, fixtures.phone(n + 1), channel.uuid, each)
          expect(yield* media.nextFetchDueAt()).toEqual(Option.some(instant(2)))
          expect(yield* claim(1)).toEqual([])
          const first = yield* claim(4, 1)
          expect(first.map((job) => job.media.uuid)).toEqual([early.uuid])
          const second = yield* claim(4, 10)
          expect(second.map((job) => job.media.uuid)).toEqual([middle.uuid])
          expect(yield* media.nextFetchDueAt()).toEqual(Option.some(instant(5)))
          // The first lease (until minute 5) ends; minute 6 hands both out again, under new leases.
          const third = yield* claim(6, 10)
          expect(sorted(third.map((job) => job.media.uuid))).toEqual(sorted([early.uuid, middle.uuid, late.uuid]))
          expect(third.find((job) => job.media.uuid === early.uuid)!.lease).not.toBe(first[0]!.lease)
        })
      ))

    it.effect("renewFetch extends the holder's lease only; recordFetch under an old lease is Lost", () =>
      run(
        Effect.gen(function* () {
          const { media } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const incoming = inboundMedia(channel.uuid, 1)
          yield* receive(org.id, fixtures.phone(1), channel.uuid, incoming)
          const [job] = yield* claim(1)
          expect(yield* media.renewFetch(incoming.uuid, "not-the-lease", instant(30))).toBe(false)
          expect(yield* media.renewFetch(incoming.uuid, job!.lease, instant(10))).toBe(true)
          expect(yield* claim(5)).toEqual([])
          const [taken] = yield* claim(11)
          expect(taken!.media.uuid).toBe(incoming.uuid)
          expect(yield* media.renewFetch(incoming.uuid, job!.lease, instant(30))).toBe(false)
          const stale = yield* media.recordFetch(incoming.uuid, job!.lease, { _tag: "Failed", code: "not_found" }, instant(11))
          expect(stale).toEqual({ _tag: "Lost" })
          expect(Option.getOrThrow(yield* media.get(org.id, incoming.uuid)).status).toBe("pending")
        })
      ))

    it.effect("recordFetch Retry: the counts and next_fetch_at written, the lease released; the job is due again then", () =>
      run(
        Effect.gen(function* () {
          const { media } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const incoming = inboundMedia(channel.uuid, 1)
          yield* receive(org.id, fixtures.phone(1), channel.uuid, incoming)
          const [job] = yield* claim(1, 10, 60)
          const retried = yield* media.recordFetch(incoming.uuid, job!.lease, { _tag: "Retry", attempts: 1, integrity_failures: 2, next_fetch_at: instant(4) }, instant(2))
          expect(retried).toEqual({ _tag: "Retrying" })
          expect(yield* media.nextFetchDueAt()).toEqual(Option.some(instant(4)))
          expect(yield* claim(3)).toEqual([])
          const [again] = yield* claim(4)
          expect(again).toMatchObject({ attempts: 1, integrity_failures: 2 })
          expect(again!.media.status).toBe("pending")
        })
      ))

    it.effect("recordFetch Stored: the media stored (size, sha256, Meta's MIME type, stored_at), its message's media rewritten with message.media_updated; the job ends", () =>
      run(
        Effect.gen(function* () {
          const { chats, media } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const incoming = inboundMedia(channel.uuid, 1)
          const appended = yield* receive(org.id, fixtures.phone(1), channel.uuid, incoming)
          if (appended._tag !== "Appended") return expect.fail("expected Appended")
          const endpoint = yield* addEndpoint(org.id, { events: ["message.media_updated"] })
          const [job] = yield* claim(2)
          const recorded = yield* media.recordFetch(
            incoming.uuid,
            job!.lease,
            { _tag: "Stored", blob_key: `media/${incoming.uuid}`, size: 4_321, sha256: "b".repeat(64), mime_type: "image/png", bytesLimit: null },
            instant(3)
          )
          if (recorded._tag !== "Settled") return expect.fail(`expected Settled, got ${recorded._tag}`)
          expect(recorded.media).toMatchObject({ status: "stored", size: 4_321, sha256: "b".repeat(64), mime_type: "image/png", stored_at: instant(3), blob_key: `media/${incoming.uuid}`, failure: null })
          expect(Option.getOrThrow(yield* media.get(org.id, incoming.uuid))).toEqual(recorded.media)
          const message = Option.getOrThrow(yield* chats.findMessage(org.id, appended.message.uuid))
          expect(message.media).toEqual({ ...withMessageMedia(incoming), status: "stored", failure: null })
          expect(message.updated_at).toBe(instant(3))
          expect(recorded.message).toEqual(message)
          expect(yield* onlyEvent(endpoint, "message.media_updated", instant(3))).toEqual(message)
          expect(yield* media.bytesUsed(org.id)).toBe(4_321)
          expect(yield* claim(100)).toEqual([])
          expect(yield* media.nextFetchDueAt()).toEqual(Option.none())
          const twice = yield* media.recordFetch(incoming.uuid, job!.lease, { _tag: "Failed", code: "expired" }, instant(4))
          expect(twice).toEqual({ _tag: "Lost" })
        })
      ))

    it.effect("recordFetch Stored over bytesLimit ends failed plan_limit; Failed ends failed with the code's title; both with the event", () =>
      run(
        Effect.gen(function* () {
          const { media } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          yield* insertUpload(org.id, upload(0, { size: 900 }))
          const big = inboundMedia(channel.uuid, 1)
          const gone = inboundMedia(channel.uuid, 1)
          yield* receive(org.id, fixtures.phone(1), channel.uuid, big)
          yield* receive(org.id, fixtures.phone(2), channel.uuid, gone)
          const endpoint = yield* addEndpoint(org.id, { events: ["message.media_updated"] })
          const jobs = yield* claim(2)
          const leaseOf = (uuid: string) => jobs.find((job) => job.media.uuid === uuid)!.lease
          const over = yield* media.recordFetch(
            big.uuid,
            leaseOf(big.uuid),
            { _tag: "Stored", blob_key: `tmp/${big.uuid}`, size: 101, sha256: "c".repeat(64), mime_type: null, bytesLimit: 1_000 },
            instant(3)
          )
          if (over._tag !== "Settled") return expect.fail("expected Settled")
          expect(over.media).toMatchObject({ status: "failed", failure: mediaFailure("plan_limit"), blob_key: null, size: null })
          expect(over.message!.media).toMatchObject({ status: "failed", failure: mediaFailure("plan_limit") })
          expect(yield* media.bytesUsed(org.id)).toBe(900)
          const failed = yield* media.recordFetch(gone.uuid, leaseOf(gone.uuid), { _tag: "Failed", code: "not_found" }, instant(3))
          if (failed._tag !== "Settled") return expect.fail("expected Settled")
          expect(failed.media).toMatchObject({ status: "failed", failure: { code: "not_found", title: mediaFailure("not_found").title } })
          const events = yield* outbox()
          expect(events.map((event) => [event.endpoint, event.type])).toEqual([
            [endpoint.uuid, "message.media_updated"],
            [endpoint.uuid, "message.media_updated"]
          ])
        })
      ))

    it.effect("markDeleted: the record stays deleted with its blob pending removal until blobRemoved; a pending one's job ends; another organization's is none", () =>
      run(
        Effect.gen(function* () {
          const { media } = yield* Storage
          const org = yield* insertOrganization()
          const other = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const file = yield* insertUpload(org.id, upload(1))
          expect(yield* media.markDeleted(other.id, file.uuid, instant(2))).toEqual(Option.none())
          expect(yield* media.blobsToRemove(10)).toEqual([])
          expect(yield* media.markDeleted(org.id, file.uuid, instant(2))).toEqual(Option.some(file))
          const deleted = Option.getOrThrow(yield* media.get(org.id, file.uuid))
          expect(deleted).toMatchObject({ status: "deleted", blob_pending_removal: true, blob_key: file.blob_key })
          expect(yield* media.blobsToRemove(10)).toEqual([{ uuid: file.uuid, blob_key: file.blob_key }])
          expect(Option.getOrThrow(yield* media.markDeleted(org.id, file.uuid, instant(3))).status).toBe("deleted")
          yield* media.blobRemoved(file.uuid)
          expect(yield* media.blobsToRemove(10)).toEqual([])
          expect(Option.getOrThrow(yield* media.get(org.id, file.uuid))).toMatchObject({ status: "deleted", blob_key: null, blob_pending_removal: false })
          const pending = inboundMedia(channel.uuid, 1)
          yield* receive(org.id, fixtures.phone(1), channel.uuid, pending)
          yield* media.markDeleted(org.id, pending.uuid, instant(2))
          expect(yield* claim(5)).toEqual([])
          expect(yield* media.blobsToRemove(10)).toEqual([])
        })
      ))

    it.effect("deleting a contact marks its media deleted (blobs pending removal) and ends their fetch jobs; others' media stay", () =>
      run(
        Effect.gen(function* () {
          const { contacts, media } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const stored = inboundMedia(channel.uuid, 1)
          const pending = inboundMedia(channel.uuid, 1)
          const kept = inboundMedia(channel.uuid, 1)
          const first = yield* receive(org.id, fixtures.phone(1), channel.uuid, stored)
          yield* receive(org.id, fixtures.phone(1), channel.uuid, pending)
          yield* receive(org.id, fixtures.phone(2), channel.uuid, kept)
          if (first._tag !== "Appended") return expect.fail("expected Appended")
          const jobs = yield* claim(2)
          const job = jobs.find((each) => each.media.uuid === stored.uuid)!
          yield* media.recordFetch(stored.uuid, job.lease, { _tag: "Stored", blob_key: `media/${stored.uuid}`, size: 10, sha256: "d".repeat(64), mime_type: null, bytesLimit: null }, instant(2))
          expect(yield* contacts.delete(org.id, first.message.contact_uuid as ContactId)).toBe(true)
          for (const uuid of [stored.uuid, pending.uuid]) {
            expect(Option.getOrThrow(yield* media.get(org.id, uuid)).status).toBe("deleted")
          }
          expect(Option.getOrThrow(yield* media.get(org.id, kept.uuid)).status).toBe("pending")
          expect(yield* media.blobsToRemove(10)).toEqual([{ uuid: stored.uuid, blob_key: `media/${stored.uuid}` }])
          // The kept media's lease (minute 2 to 3) ended: only it is handed out again.
          expect((yield* claim(60, 10)).map((each) => each.media.uuid)).toEqual([kept.uuid])
        })
      ))

    it.effect("expireBefore marks stored media created before a time deleted, oldest first, up to the limit, with the event for an inbound one", () =>
      run(
        Effect.gen(function* () {
          const { media } = yield* Storage
          const org = yield* insertOrganization()
          const oldest = yield* insertUpload(org.id, upload(1))
          const old = yield* insertUpload(org.id, upload(2))
          const recent = yield* insertUpload(org.id, upload(10))
          expect(yield* media.expireBefore(instant(5), instant(20), 1)).toBe(1)
          expect(Option.getOrThrow(yield* media.get(org.id, oldest.uuid)).status).toBe("deleted")
          expect(Option.getOrThrow(yield* media.get(org.id, old.uuid)).status).toBe("stored")
          expect(yield* media.expireBefore(instant(5), instant(20), 10)).toBe(1)
          expect(yield* media.expireBefore(instant(5), instant(20), 10)).toBe(0)
          expect(Option.getOrThrow(yield* media.get(org.id, recent.uuid)).status).toBe("stored")
          expect(sorted((yield* media.blobsToRemove(10)).map((blob) => blob.uuid))).toEqual(sorted([oldest.uuid, old.uuid]))
        })
      ))

    it.effect("postponeChannelFetches moves the channel's waiting jobs to a later time, no other channel's", () =>
      run(
        Effect.gen(function* () {
          const { media } = yield* Storage
          const org = yield* insertOrganization()
          const channel = yield* insertChannel(org.id)
          const otherChannel = yield* insertChannel(org.id)
          const a = inboundMedia(channel.uuid, 1)
          const b = inboundMedia(otherChannel.uuid, 1)
          yield* receive(org.id, fixtures.phone(1), channel.uuid, a)
          yield* receive(org.id, fixtures.phone(2), otherChannel.uuid, b)
          expect(yield* media.postponeChannelFetches(channel.uuid, instant(60))).toBe(1)
          expect(yield* media.postponeChannelFetches(channel.uuid, instant(30))).toBe(0)
          expect((yield* claim(10, 10, 100)).map((job) => job.media.uuid)).toEqual([b.uuid])
          expect((yield* claim(60)).map((job) => job.media.uuid)).toEqual([a.uuid])
        })
      ))

    it.effect("rememberUpload then uploadFor: the provider's id per channel until it lapses; a later upload replaces it", () =>
      run(
        Effect.gen(function* () {
          const { media } = yield* Storage
          const org = yield* insertOrganization()
          const file = yield* insertUpload(org.id, upload(1))
          const channel = fixtures.uuid()
          expect(yield* media.uploadFor(file.uuid, channel, instant(1))).toEqual(Option.none())
          yield* media.rememberUpload(file.uuid, channel, "meta-1", instant(10))
          expect(yield* media.uploadFor(file.uuid, channel, instant(9))).toEqual(Option.some("meta-1"))
          expect(yield* media.uploadFor(file.uuid, fixtures.uuid(), instant(9))).toEqual(Option.none())
          expect(yield* media.uploadFor(file.uuid, channel, instant(10))).toEqual(Option.none())
          yield* media.rememberUpload(file.uuid, channel, "meta-2", instant(20))
          expect(yield* media.uploadFor(file.uuid, channel, instant(15))).toEqual(Option.some("meta-2"))
        })
      ))

    if (runShared !== undefined) {
      it.effect("two stores claiming one backlog at once: each job is leased to one of them", () =>
        runShared((first, second) =>
          Effect.gen(function* () {
            const org = yield* insertOrganization()
            const channel = yield* insertChannel(org.id)
            const uuids: Array<string> = []
            for (let n = 0; n < 20; n++) {
              const incoming = inboundMedia(channel.uuid, 1)
              uuids.push(incoming.uuid)
              yield* receive(org.id, fixtures.phone(n + 1), channel.uuid, incoming)
            }
            const claims = yield* Effect.all(
              [first, second, first, second].map((store) => store.media.claimFetches(instant(2), instant(3), 7)),
              { concurrency: "unbounded" }
            )
            const claimed = claims.flat().map((job) => job.media.uuid)
            expect(claimed.length).toBe(20)
            expect(sorted(claimed)).toEqual(sorted(uuids))
          })
        ))
    }
  })
}
