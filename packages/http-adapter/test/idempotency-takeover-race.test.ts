import { afterAll, describe, expect, it } from "vitest"
import { Deferred, Effect, Layer } from "effect"
import { MessageTransport, type OutboundMessage, Storage, type StorageService } from "@switchboard/core"
import { bearer, claimedLockAgo, expectEnvelope, makeHandler, makeSharedStorage, makeTenant, phone, request } from "./helpers.js"

// An Idempotency-Key whose first request is slow, not dead (docs/messaging.md
// "Idempotency-Key"): past the 60 s lock a retry takes the claim over with the first
// request's message uuid, finds no message yet and writes it; the first request then
// writes the same uuid. It must answer that message, 200, without sending it again. On
// memory and on SQLite files.
//
// The slowness is made in the store the handler uses: while `slow`, a claim is dated one
// lock earlier (it "came 61 s ago"), and the next message append waits for `gate` before
// reaching the store.

/** A store over {@link makeSharedStorage} whose next claim can be dated a lock earlier and whose next append can be held. */
const slowStorage = () => {
  const inner = Effect.runSync(Effect.provide(Storage, makeSharedStorage()))
  const state = { slow: false, hold: undefined as Deferred.Deferred<void> | undefined, appendsHeld: 0 }
  const service: StorageService = {
    ...inner,
    idempotency: {
      ...inner.idempotency,
      claim: (organizationId, claim) => inner.idempotency.claim(organizationId, state.slow ? claimedLockAgo(claim) : claim)
    },
    chats: {
      ...inner.chats,
      appendMessage: (organizationId, append) =>
        Effect.suspend(() => {
          const gate = state.hold
          if (gate === undefined) return inner.chats.appendMessage(organizationId, append)
          state.hold = undefined
          state.appendsHeld++
          return Effect.zipRight(Deferred.await(gate), inner.chats.appendMessage(organizationId, append))
        })
    }
  }
  return { layer: Layer.succeed(Storage, service), state }
}

const storage = slowStorage()
const sent: Array<OutboundMessage> = []
/** Sends wait while `sendGate` is set; `reachedTransport` counts the sends begun. */
let sendGate: Deferred.Deferred<void> | undefined
let reachedTransport = 0
const transport = Layer.succeed(
  MessageTransport,
  MessageTransport.of({
    send: (message) =>
      Effect.gen(function* () {
        reachedTransport++
        if (sendGate !== undefined) yield* Deferred.await(sendGate)
        sent.push(message)
        return { provider_message_id: `wamid.${sent.length}`, status: "sent" as const }
      })
  })
)
const handler = makeHandler(storage.layer, { transport })
afterAll(() => handler.dispose())

/** A tenant and its `POST /send` of one body under one Idempotency-Key. */
const sendUnderKey = async (n: number) => {
  const { apiKey, api } = await makeTenant(storage.layer, handler)
  const post = () =>
    request(handler, {
      method: "POST",
      url: "/api/v1/api/send",
      headers: { ...bearer(apiKey), "content-type": "application/json", "idempotency-key": `order-${n}-shipped` },
      payload: JSON.stringify({ phone: phone(n), message: "Your order shipped" })
    })
  return { api, post }
}

/** Starts `post` as the slow first request: its claim dated a lock earlier, its append held until the gate it returns opens. */
const startSlow = async (post: () => ReturnType<typeof request>) => {
  const gate = Effect.runSync(Deferred.make<void>())
  const held = storage.state.appendsHeld
  storage.state.slow = true
  storage.state.hold = gate
  // light-my-request starts a request when it is awaited: start the first one now.
  const answer = Promise.resolve(post())
  await expect.poll(() => storage.state.appendsHeld).toBe(held + 1)
  storage.state.slow = false
  return { answer, resume: () => Effect.runSync(Deferred.succeed(gate, undefined)) }
}

describe("a slow send whose Idempotency-Key a retry took over, meeting the retry's message when it writes its own", () => {
  it("answers 200 with that message, as the retry does: one message stored, one send", async () => {
    const { api, post } = await sendUnderKey(1)
    const slow = await startSlow(post)

    // The retry takes the claim over, finds no message with the first's uuid, writes and sends it.
    const retry = await post()
    expect(retry.statusCode).toBe(200)
    const retried = expectEnvelope(retry.statusCode, retry.body).data
    const sends = sent.length

    // The first request goes on: its message is already there.
    slow.resume()
    const first = await slow.answer
    expect(first.statusCode).toBe(200)
    const answered = expectEnvelope(first.statusCode, first.body).data
    const stored = (await api.get(`/messages/${retried.message_id}`)).data
    expect(stored.status).toBe("sent")
    expect(answered).toEqual({ ...retried, next_attempt_at: stored.next_attempt_at })
    expect(sent.length).toBe(sends)
    const messages = (await api.get(`/chats/${retried.chat_uuid}/messages`)).data
    expect(messages.messages.map((message: { uuid: string }) => message.uuid)).toEqual([retried.message_id])
  })

  it("while the retry is still sending it, answers it sending and makes no attempt of its own", async () => {
    const { api, post } = await sendUnderKey(2)
    const slow = await startSlow(post)
    sendGate = Effect.runSync(Deferred.make<void>())
    const reached = reachedTransport
    const sends = sent.length
    const retry = Promise.resolve(post())
    await expect.poll(() => reachedTransport).toBe(reached + 1)

    slow.resume()
    const first = await slow.answer
    expect(first.statusCode).toBe(200)
    const answered = expectEnvelope(first.statusCode, first.body).data
    expect(answered.status).toBe("sending")
    expect(reachedTransport).toBe(reached + 1)

    Effect.runSync(Deferred.succeed(sendGate, undefined))
    sendGate = undefined
    const retried = expectEnvelope((await retry).statusCode, (await retry).body).data
    expect([retried.message_id, retried.status]).toEqual([answered.message_id, "sent"])
    expect([reachedTransport, sent.length]).toEqual([reached + 1, sends + 1])
    const messages = (await api.get(`/chats/${retried.chat_uuid}/messages`)).data
    expect(messages.messages.map((message: { uuid: string }) => message.uuid)).toEqual([retried.message_id])
  })
})
