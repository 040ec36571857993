import { describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { Storage, type StorageService } from "@switchboard/core"
import { statusPayload } from "@switchboard/whatsapp-simulator"
import { bearer, claimedLockAgo, expectEnvelope, makeSharedStorage, phone, request, settledSend } from "./helpers.js"
import { template, useSendQueueSetup } from "./send-queue-helpers.js"

// An Idempotency-Key whose first request's process died after sending (docs/messaging.md
// "Idempotency-Key"): the retry, once the 60 s lock has passed, takes the claim over and
// answers the message the first attempt created, as it now stands, instead of sending
// again. The sends go through a channel to the WhatsApp simulator (the one stand-in for
// Meta's Graph API), on memory and on SQLite files.
//
// The crash is simulated in the store the handler uses: while `crashing`, the first
// request's claim is dated one lock earlier (it "came 61 s ago") and neither its completion
// nor a release reaches the store, which is what a process dying before it recorded its
// response leaves behind. Everything else — the claim, the message, the Graph request —
// is the handler's real work.

const { setup, postWebhook, requestsFor, simulator } = useSendQueueSetup({
  appSecret: "idempotency-takeover-app-secret",
  numberBase: 106540352280000
})

/** A store over {@link makeSharedStorage} whose idempotency records can be left as a crash leaves them. */
const crashableStorage = () => {
  const inner = Effect.runSync(Effect.provide(Storage, makeSharedStorage()))
  const state = { crashing: false }
  const service: StorageService = {
    ...inner,
    idempotency: {
      ...inner.idempotency,
      claim: (organizationId, claim) => inner.idempotency.claim(organizationId, state.crashing ? claimedLockAgo(claim) : claim),
      complete: (organizationId, key, response) => (state.crashing ? Effect.void : inner.idempotency.complete(organizationId, key, response)),
      release: (organizationId, key) => (state.crashing ? Effect.void : inner.idempotency.release(organizationId, key))
    }
  }
  return { layer: Layer.succeed(Storage, service), state }
}

describe("a send whose process died after sending, retried with its Idempotency-Key after the lock", () => {
  it("answers 200 with the first message as it now stands: one message in the chat, one request to Meta", async () => {
    const crashable = crashableStorage()
    const setupOf = await setup({ storage: crashable.layer })
    const to = phone(1)
    const body = { phone: to, template: template("#42") }
    const post = () =>
      request(setupOf.handler, {
        method: "POST",
        url: "/api/v1/api/send/template",
        headers: { ...bearer(setupOf.apiKey), "content-type": "application/json", "idempotency-key": "order-42-shipped" },
        payload: JSON.stringify(body)
      })

    // The first request claims the key, creates its message and sends it; then its process dies.
    crashable.state.crashing = true
    const answer = expectEnvelope(...responseOf(await post()))
    crashable.state.crashing = false
    // Its inline attempt, when late for its pacing slot (a busy machine), is handed back and
    // the dispatcher sends it: settledSend answers as the inline attempt would have.
    const first = await settledSend(setupOf.api, answer)
    expect(first.data.status).toBe("sent")
    const messageId: string = first.data.message_id

    // Meta reports it delivered meanwhile.
    await postWebhook(
      setupOf,
      JSON.stringify(
        statusPayload({
          number: setupOf.number,
          wamid: first.data.provider_message_id,
          status: "delivered",
          recipient_id: to,
          biz_opaque_callback_data: messageId
        })
      )
    )

    const retry = await post()
    expect(retry.statusCode).toBe(200)
    expect(retry.headers["idempotent-replayed"]).toBeUndefined()
    const answered = expectEnvelope(...responseOf(retry))
    const stored = (await setupOf.api.get(`/messages/${messageId}`)).data
    expect(stored.status).toBe("delivered")
    expect(answered.data).toEqual({
      message_id: messageId,
      chat_uuid: first.data.chat_uuid,
      contact_uuid: first.data.contact_uuid,
      status: "delivered",
      provider_message_id: first.data.provider_message_id,
      next_attempt_at: stored.next_attempt_at,
      failure: null,
      // Read from the message, which stored it at its creation.
      transport: "whatsapp"
    })
    expect([answered.message, stored.transport]).toEqual(["Message sent", "whatsapp"])
    const messages = (await setupOf.api.get(`/chats/${first.data.chat_uuid}/messages`)).data
    expect(messages.messages.map((message: { uuid: string }) => message.uuid)).toEqual([messageId])
    expect(requestsFor(setupOf, messageId)).toHaveLength(1)
    expect(simulator().sends(setupOf.number.phone_number_id)).toHaveLength(1)

    // The takeover's answer was stored: the next retry is a replay of it.
    const replay = await post()
    expect(replay.headers["idempotent-replayed"]).toBe("true")
    expect(expectEnvelope(...responseOf(replay)).data).toEqual(answered.data)
  })
})

const responseOf = (response: { readonly statusCode: number; readonly body: string }) => [response.statusCode, response.body] as const
