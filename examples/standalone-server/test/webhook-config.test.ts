import { ConfigProvider, Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { loadConfig } from "../src/config.js"
import { webhookConfig } from "../src/webhooks.js"

// The SWITCHBOARD_WEBHOOKS_* variables (docs/configuration.md): defaults, values, and
// errors naming the variable.

const load = (variables: Record<string, string>) =>
  Effect.runPromise(
    Effect.either(loadConfig(webhookConfig).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(variables))))))
  )

describe("webhookConfig", () => {
  it("defaults to https and public addresses, and the default schedule", async () => {
    expect(await load({})).toEqual(Either.right({ allowInsecureUrls: false, allowPrivateNetworks: false }))
    expect(await load({ SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE: "", SWITCHBOARD_WEBHOOKS_RETRY_DELAYS_MS: " " })).toEqual(
      Either.right({ allowInsecureUrls: false, allowPrivateNetworks: false })
    )
  })

  it("reads SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE and SWITCHBOARD_WEBHOOKS_RETRY_DELAYS_MS", async () => {
    expect(await load({ SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE: "1", SWITCHBOARD_WEBHOOKS_RETRY_DELAYS_MS: "10, 20,0" })).toEqual(
      Either.right({ allowInsecureUrls: true, allowPrivateNetworks: true, retryDelaysMs: [10, 20, 0] })
    )
    expect(await load({ SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE: "TRUE" })).toEqual(
      Either.right({ allowInsecureUrls: true, allowPrivateNetworks: true })
    )
    expect(await load({ SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE: "false" })).toEqual(
      Either.right({ allowInsecureUrls: false, allowPrivateNetworks: false })
    )
  })

  it("names the variable of a bad value", async () => {
    const allow = await load({ SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE: "yes" })
    expect(Either.isLeft(allow) && allow.left.message).toContain("SWITCHBOARD_WEBHOOKS_ALLOW_PRIVATE must be 1, true, 0 or false")
    for (const bad of ["5s", "10,,20", "-5", "1.5"]) {
      const delays = await load({ SWITCHBOARD_WEBHOOKS_RETRY_DELAYS_MS: bad })
      expect(Either.isLeft(delays) && delays.left.message).toContain("SWITCHBOARD_WEBHOOKS_RETRY_DELAYS_MS must be")
    }
  })
})
