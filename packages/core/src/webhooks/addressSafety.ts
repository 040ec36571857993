import { lookup } from "node:dns/promises"
import { Context, Effect } from "effect"
import ipaddr from "ipaddr.js"
import { WebhookUrlRefused } from "../model/webhookErrors.js"
import type { WebhookSettingsValue } from "./WebhookSettings.js"

/**
 * Address safety of webhook endpoints (docs/webhooks.md "Address safety"): an endpoint URL
 * must be `https` (or `http` with `allowInsecureUrls`), carry no credentials, and its host
 * must be a public unicast address — an IP literal, or a name every address of which is
 * one — unless `allowPrivateNetworks`. Addresses are classified with `ipaddr.js`
 * (`ipaddr.process` turns IPv4-mapped IPv6 addresses such as `::ffff:127.0.0.1` into
 * IPv4 first); only its `unicast` range is public, so loopback, private, link-local,
 * unique-local, carrier-grade NAT, reserved, unspecified, multicast, broadcast and the
 * other special ranges are all refused.
 *
 * The check runs twice: at registration ({@link checkWebhookUrl}), where a name that does
 * not resolve is accepted, and at every delivery ({@link resolveWebhookAddress}), where
 * the name is resolved again and the connection uses the address checked then (so a name
 * re-pointed to an internal address after registration, DNS rebinding, is refused).
 */

/** The address a delivery connects to: checked, never resolved again for the connection. */
export interface CheckedAddress {
  readonly address: string
  readonly family: 4 | 6
}

/**
 * One address a host name resolves to, as `node:dns/promises` `lookup(host, { all: true })`
 * answers it (`family` 4 or 6).
 *
 * @category webhooks
 */
export interface ResolvedHostAddress {
  readonly address: string
  readonly family: number
}

/**
 * The value of {@link WebhookHostResolver}: `lookup` answers every address of a host name,
 * and rejects when the name does not resolve.
 *
 * @category webhooks
 */
export interface WebhookHostResolverValue {
  readonly lookup: (hostname: string) => Promise<ReadonlyArray<ResolvedHostAddress>>
}

/**
 * How webhook host names are resolved; default: the system resolver,
 * `node:dns/promises` `lookup(hostname, { all: true })`. Tests provide another (for example
 * a name that resolves to a public address at registration and to `127.0.0.1` at delivery).
 *
 * @category webhooks
 */
export class WebhookHostResolver extends Context.Reference<WebhookHostResolver>()(
  "@switchboard/core/WebhookHostResolver",
  {
    defaultValue: (): WebhookHostResolverValue => ({
      lookup: (hostname) => lookup(hostname, { all: true, verbatim: true })
    })
  }
) {}

/**
 * Why `address` (an IP literal, IPv4 or IPv6) is not a public unicast address: the name
 * of its `ipaddr.js` range (`loopback`, `private`, `linkLocal`, `uniqueLocal`,
 * `carrierGradeNat`, `unspecified`, …), `"invalid"` when it is no IP address, or
 * `undefined` when it is public.
 *
 * @category webhooks
 */
export const internalAddressRange = (address: string): string | undefined => {
  const literal = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address
  if (!ipaddr.isValid(literal)) return "invalid"
  let parsed: ipaddr.IPv4 | ipaddr.IPv6
  try {
    parsed = ipaddr.process(literal)
  } catch {
    return "invalid"
  }
  const range = parsed.range()
  return range === "unicast" ? undefined : range
}

/** The URL's host without the brackets of an IPv6 literal. */
const bareHostname = (url: URL): string =>
  url.hostname.startsWith("[") && url.hostname.endsWith("]") ? url.hostname.slice(1, -1) : url.hostname

/** The parsed URL when its form is acceptable (scheme, credentials, host); else the refusal. */
const checkForm = (
  url: string,
  settings: Pick<WebhookSettingsValue, "allowInsecureUrls">
): Effect.Effect<URL, WebhookUrlRefused> =>
  Effect.gen(function*() {
    const parsed = yield* Effect.try({
      try: () => new URL(url),
      catch: () => new WebhookUrlRefused({ url, reason: "not a URL" })
    })
    if (parsed.protocol !== "https:" && !(parsed.protocol === "http:" && settings.allowInsecureUrls)) {
      return yield* new WebhookUrlRefused({
        url,
        reason: settings.allowInsecureUrls ? "the scheme must be https or http" : "the scheme must be https"
      })
    }
    if (parsed.username !== "" || parsed.password !== "") {
      return yield* new WebhookUrlRefused({ url: withoutCredentials(parsed), reason: "the URL must not contain credentials" })
    }
    if (bareHostname(parsed) === "") return yield* new WebhookUrlRefused({ url, reason: "the URL has no host" })
    return parsed
  })

/** The URL with its user name and password removed, for error messages. */
const withoutCredentials = (url: URL): string => {
  const copy = new URL(url.href)
  copy.username = ""
  copy.password = ""
  return copy.href
}

/** Refuses `address` when it is internal (unless allowed), naming its range. */
const checkAddress = (
  url: URL,
  host: string,
  address: string,
  settings: Pick<WebhookSettingsValue, "allowPrivateNetworks">
): Effect.Effect<void, WebhookUrlRefused> => {
  const range = internalAddressRange(address)
  if (range === undefined || (settings.allowPrivateNetworks && range !== "invalid")) return Effect.void
  const subject = host === address ? `the address ${address}` : `${host} resolves to ${address}, which`
  return Effect.fail(
    new WebhookUrlRefused({
      url: url.href,
      reason: range === "invalid"
        ? `${subject} is not an IP address`
        : `${subject} is an internal address (${range}); only public addresses are allowed`
    })
  )
}

/** Every address of `host`; fails with `"unresolved"` when it does not resolve (or resolves to none). */
const resolveHost = (host: string): Effect.Effect<ReadonlyArray<ResolvedHostAddress>, "unresolved"> =>
  Effect.gen(function*() {
    const resolver = yield* WebhookHostResolver
    const addresses = yield* Effect.tryPromise({ try: () => resolver.lookup(host), catch: () => "unresolved" as const })
    if (addresses.length === 0) return yield* Effect.fail("unresolved" as const)
    return addresses
  })

/**
 * At registration: `url` must parse, be `https` (or `http` with `allowInsecureUrls`),
 * carry no credentials, and its host — an IP literal, or a name resolved now through
 * {@link WebhookHostResolver} (one that does not resolve is accepted, and checked at
 * delivery) — must have no internal address unless `allowPrivateNetworks`. Answers the
 * parsed URL; fails with {@link WebhookUrlRefused}, whose `reason` says why.
 *
 * @category webhooks
 */
export const checkWebhookUrl = (
  url: string,
  settings: Pick<WebhookSettingsValue, "allowInsecureUrls" | "allowPrivateNetworks">
): Effect.Effect<URL, WebhookUrlRefused> =>
  Effect.gen(function*() {
    const parsed = yield* checkForm(url, settings)
    const host = bareHostname(parsed)
    if (ipaddr.isValid(host)) {
      yield* checkAddress(parsed, host, host, settings)
      return parsed
    }
    if (settings.allowPrivateNetworks) return parsed
    const addresses = yield* resolveHost(host).pipe(Effect.orElseSucceed(() => []))
    for (const { address } of addresses) yield* checkAddress(parsed, host, address, settings)
    return parsed
  })

/**
 * At each delivery: resolves the URL's host (through {@link WebhookHostResolver}) and
 * checks every address as at registration; answers the address to connect to, the first
 * one (the connection must use it, not resolve again). Fails with
 * {@link WebhookUrlRefused} when any address is internal (unless `allowPrivateNetworks`)
 * or the name does not resolve.
 *
 * @category webhooks
 */
export const resolveWebhookAddress = (
  url: URL,
  settings: Pick<WebhookSettingsValue, "allowPrivateNetworks">
): Effect.Effect<CheckedAddress, WebhookUrlRefused> =>
  Effect.gen(function*() {
    const host = bareHostname(url)
    if (host === "") return yield* new WebhookUrlRefused({ url: url.href, reason: "the URL has no host" })
    if (ipaddr.isValid(host)) {
      yield* checkAddress(url, host, host, settings)
      return { address: host, family: ipaddr.parse(host).kind() === "ipv6" ? 6 : 4 } as const
    }
    const addresses = yield* resolveHost(host).pipe(
      Effect.mapError(() => new WebhookUrlRefused({ url: url.href, reason: `${host} does not resolve` }))
    )
    for (const { address } of addresses) yield* checkAddress(url, host, address, settings)
    const first = addresses[0]!
    return { address: first.address, family: first.family === 6 ? 6 : 4 } as const
  })
