import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import {
  WebhookHostResolver,
  checkWebhookUrl,
  internalAddressRange,
  resolveWebhookAddress,
  type ResolvedHostAddress
} from "@switchboard/core"

// Address safety of webhook endpoints (docs/webhooks.md "Address safety"): every refused
// class of address, the scheme and credential rules, names resolved at registration and at
// delivery, and the two options.

const strict = { allowInsecureUrls: false, allowPrivateNetworks: false }

/** A resolver answering from a fixed table; names not in it do not resolve. */
const resolverLayer = (table: Record<string, ReadonlyArray<ResolvedHostAddress>>) =>
  Layer.succeed(WebhookHostResolver, {
    lookup: (hostname) => {
      const addresses = table[hostname]
      return addresses === undefined ? Promise.reject(new Error("ENOTFOUND")) : Promise.resolve(addresses)
    }
  })

const publicResolver = resolverLayer({
  "hooks.example.com": [{ address: "93.184.215.14", family: 4 }],
  "dual.example.com": [{ address: "93.184.215.14", family: 4 }, { address: "2606:2800:21f:cb07:6820:80da:af6b:8b2c", family: 6 }],
  "mixed.example.com": [{ address: "93.184.215.14", family: 4 }, { address: "10.0.0.7", family: 4 }],
  "internal.example.com": [{ address: "127.0.0.1", family: 4 }]
})

const refusal = (url: string, settings = strict) =>
  checkWebhookUrl(url, settings).pipe(Effect.flip, Effect.map((error) => error.reason), Effect.provide(publicResolver))

describe("internalAddressRange", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["::1", "loopback"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.254", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "linkLocal"],
    ["fe80::1", "linkLocal"],
    ["fc00::1", "uniqueLocal"],
    ["fd12:3456::1", "uniqueLocal"],
    ["100.64.0.1", "carrierGradeNat"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:10.0.0.1", "private"],
    ["224.0.0.1", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["240.0.0.1", "reserved"],
    ["[::1]", "loopback"],
    ["not-an-address", "invalid"]
  ])("%s is %s", (address, range) => {
    expect(internalAddressRange(address)).toBe(range)
  })

  it.each(["93.184.215.14", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"])(
    "%s is public",
    (address) => {
      expect(internalAddressRange(address)).toBeUndefined()
    }
  )
})

describe("checkWebhookUrl", () => {
  it.effect("accepts an https URL on a public address or a name resolving only to public addresses", () =>
    Effect.gen(function*() {
      for (const url of ["https://93.184.215.14/hooks", "https://hooks.example.com/in?x=1", "https://dual.example.com:8443/"]) {
        const parsed = yield* checkWebhookUrl(url, strict)
        expect(parsed.href).toBe(new URL(url).href)
      }
    }).pipe(Effect.provide(publicResolver)))

  it.effect.each([
    ["https://127.0.0.1/", "loopback"],
    ["https://[::1]/", "loopback"],
    ["https://10.0.0.1/", "private"],
    ["https://172.16.5.4/", "private"],
    ["https://192.168.0.10/", "private"],
    ["https://169.254.169.254/latest/meta-data", "linkLocal"],
    ["https://[fe80::1]/", "linkLocal"],
    ["https://[fc00::1]/", "uniqueLocal"],
    ["https://100.64.1.1/", "carrierGradeNat"],
    ["https://0.0.0.0/", "unspecified"],
    ["https://[::ffff:127.0.0.1]/", "loopback"],
    ["https://0x7f000001/", "loopback"],
    ["https://2130706433/", "loopback"],
    ["https://internal.example.com/", "loopback"],
    ["https://mixed.example.com/", "private"]
  ] as Array<[string, string]>)("refuses %s (%s)", ([url, range]) =>
    Effect.gen(function*() {
      const reason = yield* refusal(url)
      expect(reason).toContain(`(${range})`)
    }))

  it.effect("refuses a name resolving to loopback with the system resolver (localhost)", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(checkWebhookUrl("https://localhost:8443/hooks", strict))
      expect(error._tag).toBe("WebhookUrlRefused")
      expect(error.reason).toContain("loopback")
    }))

  it.effect("refuses http, other schemes, credentials, and what is not a URL", () =>
    Effect.gen(function*() {
      expect(yield* refusal("http://hooks.example.com/")).toBe("the scheme must be https")
      expect(yield* refusal("ftp://hooks.example.com/")).toBe("the scheme must be https")
      expect(yield* refusal("not a url")).toBe("not a URL")
      expect(yield* refusal("https://user:pass@hooks.example.com/")).toBe("the URL must not contain credentials")
      expect(yield* refusal("https://user@hooks.example.com/")).toBe("the URL must not contain credentials")
      const error = yield* checkWebhookUrl("https://user:hunter2@hooks.example.com/", strict).pipe(
        Effect.flip,
        Effect.provide(publicResolver)
      )
      expect(error.url).not.toContain("hunter2")
      expect(error.message).not.toContain("hunter2")
    }))

  it.effect("accepts a name that does not resolve (it is checked again at delivery)", () =>
    Effect.gen(function*() {
      const parsed = yield* checkWebhookUrl("https://not-yet.example.com/hooks", strict)
      expect(parsed.hostname).toBe("not-yet.example.com")
    }).pipe(Effect.provide(publicResolver)))

  it.effect("allowInsecureUrls accepts http (still refusing internal addresses); allowPrivateNetworks accepts them", () =>
    Effect.gen(function*() {
      const insecure = { allowInsecureUrls: true, allowPrivateNetworks: false }
      expect((yield* checkWebhookUrl("http://hooks.example.com/", insecure)).protocol).toBe("http:")
      expect(yield* refusal("http://127.0.0.1:8080/", insecure)).toContain("(loopback)")
      expect(yield* refusal("ftp://hooks.example.com/", insecure)).toBe("the scheme must be https or http")
      const private_ = { allowInsecureUrls: false, allowPrivateNetworks: true }
      expect((yield* checkWebhookUrl("https://127.0.0.1:8443/", private_)).hostname).toBe("127.0.0.1")
      expect((yield* checkWebhookUrl("https://internal.example.com/", private_)).hostname).toBe("internal.example.com")
      expect(yield* refusal("http://127.0.0.1/", private_)).toBe("the scheme must be https")
      const both = { allowInsecureUrls: true, allowPrivateNetworks: true }
      expect((yield* checkWebhookUrl("http://[::1]:8080/", both)).hostname).toBe("[::1]")
    }).pipe(Effect.provide(publicResolver)))
})

describe("resolveWebhookAddress", () => {
  it.effect("answers the checked address of a literal or a name", () =>
    Effect.gen(function*() {
      expect(yield* resolveWebhookAddress(new URL("https://93.184.215.14/"), strict)).toEqual({
        address: "93.184.215.14",
        family: 4
      })
      expect(yield* resolveWebhookAddress(new URL("https://[2606:4700:4700::1111]/"), strict)).toEqual({
        address: "2606:4700:4700::1111",
        family: 6
      })
      expect(yield* resolveWebhookAddress(new URL("https://hooks.example.com/"), strict)).toEqual({
        address: "93.184.215.14",
        family: 4
      })
    }).pipe(Effect.provide(publicResolver)))

  it.effect("refuses a name that does not resolve, or any of whose addresses is internal", () =>
    Effect.gen(function*() {
      const unresolved = yield* Effect.flip(resolveWebhookAddress(new URL("https://not-yet.example.com/"), strict))
      expect(unresolved.reason).toBe("not-yet.example.com does not resolve")
      const mixed = yield* Effect.flip(resolveWebhookAddress(new URL("https://mixed.example.com/"), strict))
      expect(mixed.reason).toContain("10.0.0.7")
      const internal = yield* Effect.flip(resolveWebhookAddress(new URL("https://internal.example.com/"), strict))
      expect(internal.reason).toContain("(loopback)")
      const literal = yield* Effect.flip(resolveWebhookAddress(new URL("http://[::ffff:127.0.0.1]/"), strict))
      expect(literal.reason).toContain("(loopback)")
    }).pipe(Effect.provide(publicResolver)))

  it.effect("allowPrivateNetworks connects to internal addresses", () =>
    Effect.gen(function*() {
      expect(
        yield* resolveWebhookAddress(new URL("http://internal.example.com/"), { allowPrivateNetworks: true })
      ).toEqual({ address: "127.0.0.1", family: 4 })
    }).pipe(Effect.provide(publicResolver)))

  it.effect("a name resolved again at delivery: public at registration, internal now (DNS rebinding) is refused", () =>
    Effect.gen(function*() {
      yield* checkWebhookUrl("https://rebind.example.com/", strict).pipe(
        Effect.provide(resolverLayer({ "rebind.example.com": [{ address: "93.184.215.14", family: 4 }] }))
      )
      const error = yield* Effect.flip(resolveWebhookAddress(new URL("https://rebind.example.com/"), strict)).pipe(
        Effect.provide(resolverLayer({ "rebind.example.com": [{ address: "127.0.0.1", family: 4 }] }))
      )
      expect(error.reason).toContain("127.0.0.1")
    }))
})
