import { ConfigProvider, Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { loadConfig } from "../src/config.js"
import { mediaConfig } from "../src/media.js"

// The media variables (docs/configuration.md, docs/media.md "Configuration"): what reaches
// the handler's `media.fetch`, and errors naming the variable.

const load = (variables: Record<string, string>) =>
  Effect.runPromise(
    Effect.either(
      loadConfig(mediaConfig({ _tag: "Memory" })).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(variables)))))
    )
  )

describe("mediaConfig", () => {
  it("passes no fetch setting by default, so the handler's defaults hold", async () => {
    const media = await load({})
    expect(Either.isRight(media) && media.right.fetch).toEqual({})
    const empty = await load({ SWITCHBOARD_MEDIA_FETCH_LEASE_MS: " ", SWITCHBOARD_MEDIA_RETRY_DELAYS_MS: "" })
    expect(Either.isRight(empty) && empty.right.fetch).toEqual({})
  })

  it("reads SWITCHBOARD_MEDIA_FETCH_LEASE_MS, SWITCHBOARD_MEDIA_RETRY_DELAYS_MS and MEDIA_RETENTION_DAYS", async () => {
    const media = await load({ SWITCHBOARD_MEDIA_FETCH_LEASE_MS: "4000", SWITCHBOARD_MEDIA_RETRY_DELAYS_MS: "500, 1000", MEDIA_RETENTION_DAYS: "30" })
    expect(Either.isRight(media) && media.right.fetch).toEqual({ leaseMs: 4_000, retryDelaysMs: [500, 1_000], retentionDays: 30 })
  })

  it("names the variable of a bad value", async () => {
    for (const bad of ["999", "0", "5s", "-1000", "1.5"]) {
      const media = await load({ SWITCHBOARD_MEDIA_FETCH_LEASE_MS: bad })
      expect(Either.isLeft(media) && media.left.message).toContain("SWITCHBOARD_MEDIA_FETCH_LEASE_MS must be")
    }
  })
})
