/** `verifyWebhook` against deliveries signed as the server signs them (Standard Webhooks). */
import { Webhook } from "standardwebhooks"
import { describe, expect, it } from "vitest"
import { verifyWebhook, WebhookVerificationError } from "../src/index.js"

const SECRET = `whsec_${Buffer.from("a".repeat(32)).toString("base64")}`
const OTHER = `whsec_${Buffer.from("b".repeat(32)).toString("base64")}`
const event = { id: "evt_1", type: "message.received", data: { text: "hi" } }
const body = JSON.stringify(event)

const signed = (secret: string, at = new Date(), id = "msg_1") => ({
  "webhook-id": id,
  "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
  "webhook-signature": new Webhook(secret).sign(id, at, body)
})

describe("verifyWebhook", () => {
  it("resolves to the parsed event for a delivery signed with the secret (string or bytes, plain object or Headers)", async () => {
    expect(await verifyWebhook(body, signed(SECRET), SECRET)).toEqual(event)
    expect(await verifyWebhook(new TextEncoder().encode(body), new Headers(signed(SECRET)), [SECRET])).toEqual(event)
    const upper = Object.fromEntries(Object.entries(signed(SECRET)).map(([name, value]) => [name.toUpperCase(), value]))
    expect(await verifyWebhook(body, upper, SECRET)).toEqual(event)
  })

  it("accepts any v1 entry of several signatures, for any of several secrets (a rotation's overlap)", async () => {
    const headers = signed(SECRET)
    const both = { ...headers, "webhook-signature": `${signed(OTHER)["webhook-signature"]} ${headers["webhook-signature"]}` }
    expect(await verifyWebhook(body, both, OTHER)).toEqual(event)
    expect(await verifyWebhook(body, both, SECRET)).toEqual(event)
    expect(await verifyWebhook(body, signed(OTHER), [SECRET, OTHER])).toEqual(event)
  })

  it("rejects a wrong secret, a changed body, a missing header, a non-v1 entry", async () => {
    await expect(verifyWebhook(body, signed(OTHER), SECRET)).rejects.toBeInstanceOf(WebhookVerificationError)
    await expect(verifyWebhook(body.replace("hi", "ho"), signed(SECRET), SECRET)).rejects.toBeInstanceOf(WebhookVerificationError)
    const { "webhook-id": _id, ...noId } = signed(SECRET)
    await expect(verifyWebhook(body, noId, SECRET)).rejects.toBeInstanceOf(WebhookVerificationError)
    const headers = signed(SECRET)
    const v2 = { ...headers, "webhook-signature": headers["webhook-signature"].replace("v1,", "v2,") }
    await expect(verifyWebhook(body, v2, SECRET)).rejects.toBeInstanceOf(WebhookVerificationError)
  })

  it("accepts a timestamp within 5 minutes either way and rejects one beyond, never naming the secret", async () => {
    const now = new Date("2026-01-01T12:00:00Z")
    const at = (seconds: number) => new Date(now.getTime() + seconds * 1000)
    expect(await verifyWebhook(body, signed(SECRET, at(-299)), SECRET, { now })).toEqual(event)
    expect(await verifyWebhook(body, signed(SECRET, at(299)), SECRET, { now })).toEqual(event)
    for (const seconds of [-301, 301]) {
      const error = await verifyWebhook(body, signed(SECRET, at(seconds)), SECRET, { now }).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(WebhookVerificationError)
      expect(String(error)).not.toContain(SECRET.slice(6))
    }
  })
})
