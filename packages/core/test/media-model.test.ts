import { createHash } from "node:crypto"
import { describe, expect, it } from "vitest"
import {
  INBOUND_MEDIA_ID_LIFETIME_MS,
  MEDIA_FAILURE_TITLES,
  mediaFailure,
  mediaLookupPausedUntil,
  mediaMimeType,
  mimeEssence,
  nextMediaFetchAt,
  sameSha256
} from "@switchboard/core"

// The pure rules of media (docs/media.md): types and limits, the fetch's retry schedule and
// its end, the per-channel budget of failed look-ups, and the provider's digest compared.

const MINUTE = 60_000
const HOUR = 60 * MINUTE

describe("media MIME types", () => {
  it("gives each accepted MIME type its media type and Meta's size limit, parameters and case ignored", () => {
    expect(mediaMimeType("image/jpeg")).toEqual({ type: "image", maxBytes: 5 * 1024 * 1024 })
    expect(mediaMimeType("Image/PNG; charset=binary")).toEqual({ type: "image", maxBytes: 5 * 1024 * 1024 })
    expect(mediaMimeType("audio/ogg; codecs=opus")).toEqual({ type: "audio", maxBytes: 16 * 1024 * 1024 })
    expect(mediaMimeType("video/mp4")).toEqual({ type: "video", maxBytes: 16 * 1024 * 1024 })
    expect(mediaMimeType("application/pdf")).toEqual({ type: "document", maxBytes: 100 * 1024 * 1024 })
    expect(mediaMimeType("image/webp")).toEqual({ type: "sticker", maxBytes: 500 * 1024 })
    for (const refused of ["image/gif", "application/zip", "text/html", "", "image"]) expect(mediaMimeType(refused)).toBeUndefined()
    expect(mimeEssence(" Text/Plain ; charset=utf-8")).toBe("text/plain")
  })
})

describe("the fetch's retry schedule", () => {
  const failedAt = Date.parse("2026-11-28T10:00:00Z")
  const expiresAt = failedAt + INBOUND_MEDIA_ID_LIFETIME_MS

  it("waits 30 s, 2 min, 10 min, 1 h, then every 6 h after each further failure", () => {
    const waits = [1, 2, 3, 4, 5, 6, 20].map((attempts) => nextMediaFetchAt(attempts, failedAt, expiresAt)! - failedAt)
    expect(waits).toEqual([30_000, 2 * MINUTE, 10 * MINUTE, HOUR, 6 * HOUR, 6 * HOUR, 6 * HOUR])
  })

  it("gives up (null) once the next attempt would come at or after the provider's id lapses (7 days)", () => {
    expect(INBOUND_MEDIA_ID_LIFETIME_MS).toBe(7 * 24 * HOUR)
    expect(nextMediaFetchAt(9, expiresAt - 6 * HOUR, expiresAt)).toBeNull()
    expect(nextMediaFetchAt(9, expiresAt - 6 * HOUR - 1, expiresAt)).toBe(expiresAt - 1)
    expect(nextMediaFetchAt(1, expiresAt - 10_000, expiresAt)).toBeNull()
  })
})

describe("the budget of failed look-ups per channel", () => {
  const now = Date.parse("2026-11-28T10:00:00Z")

  it("pauses a channel's fetches for an hour after its fifth failed look-up within an hour", () => {
    const four = [now - 50 * MINUTE, now - 30 * MINUTE, now - 10 * MINUTE, now - MINUTE]
    expect(mediaLookupPausedUntil(four, now)).toBeNull()
    expect(mediaLookupPausedUntil([...four, now], now)).toBe(now + HOUR)
  })

  it("counts only the last hour's failures, and ends the pause an hour after the last of them", () => {
    const old = [now - 3 * HOUR, now - 2 * HOUR, now - 90 * MINUTE, now - 61 * MINUTE]
    expect(mediaLookupPausedUntil([...old, now - MINUTE], now)).toBeNull()
    const five = [now - 59 * MINUTE, now - 58 * MINUTE, now - 57 * MINUTE, now - 56 * MINUTE, now - 55 * MINUTE]
    expect(mediaLookupPausedUntil(five, now)).toBe(now + 5 * MINUTE)
    expect(mediaLookupPausedUntil(five, now + 5 * MINUTE)).toBeNull()
  })
})

describe("the provider's SHA-256", () => {
  const digest = createHash("sha256").update("a customer's photo").digest()
  const hex = digest.toString("hex")

  it("matches in hex (the media look-up) or base64 (a message webhook), in either case of hex", () => {
    expect(sameSha256(hex, hex)).toBe(true)
    expect(sameSha256(hex, hex.toUpperCase())).toBe(true)
    expect(sameSha256(hex, digest.toString("base64"))).toBe(true)
    expect(sameSha256(hex, digest.toString("base64url"))).toBe(true)
  })

  it("never matches another digest, a truncated one, or something that is neither form", () => {
    const other = createHash("sha256").update("another photo").digest()
    for (const declared of [other.toString("hex"), other.toString("base64"), hex.slice(0, 63), "", "not a digest", `${hex}00`]) {
      expect(sameSha256(hex, declared)).toBe(false)
    }
  })
})

describe("media failures", () => {
  it("carry a code and its title", () => {
    expect(mediaFailure("too_large")).toEqual({ code: "too_large", title: MEDIA_FAILURE_TITLES.too_large })
    expect(Object.keys(MEDIA_FAILURE_TITLES).sort()).toEqual(["channel_removed", "expired", "integrity", "not_found", "plan_limit", "too_large"])
  })
})
