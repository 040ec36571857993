import { describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { Storage, type StorageService } from "@switchboard/core"
import { maxInWindow, statusPayload } from "@switchboard/whatsapp-simulator"
import { isHandedBack, makeSharedStorage, phone, settledSend, type ApiClient } from "./helpers.js"
import { runDispatchers } from "@switchboard/http-adapter"
import { SECRET_KEY, SEND_QUEUE, template, useSendQueueSetup } from "./send-queue-helpers.js"

// The send queue over HTTP (docs/messaging.md "The send queue", docs/channels.md "Pause and
// resume"): every class of Meta's failures answered on demand by the WhatsApp simulator,
// the one stand-in for the Graph API. Delays are milliseconds so the whole schedule runs
// here: retries after 50 ms, an attempt times out after 400 ms, an unknown outcome settles
// for 300 ms.

const { simulator, setup, postWebhook, requestsFor, messageWhen } = useSendQueueSetup({
  appSecret: "send-queue-app-secret",
  numberBase: 106540352260000
})

type Setup = Awaited<ReturnType<typeof setup>>

/** `POST /send/template` of order `order` to `to`. */
const sendTemplate = (api: ApiClient, to: string, order = "#1") => api.post("/send/template", { phone: to, template: template(order) })

/**
 * {@link sendTemplate}, answered as its inline attempt would answer it: on a busy machine that
 * attempt may be late for its pacing slot and handed back, and then this waits for the
 * dispatcher's attempt (`until` as {@link settledSend}'s), so the simulator's scripted answer
 * meets the message either way.
 */
const sendTemplateAttempted = async (
  setupOf: Setup,
  to: string,
  order = "#1",
  until?: (message: Record<string, any>) => boolean
) => settledSend(setupOf.api, await sendTemplate(setupOf.api, to, order), until === undefined ? {} : { until })

/**
 * The channel of `setupOf` once paused: at once when the send's inline attempt met the
 * account error, moments later when that attempt was late for its pacing slot and the
 * dispatcher's met it (a paused send answers like that hand-back, so the channel tells).
 */
const pausedChannel = async (setupOf: Setup) => {
  const deadline = Date.now() + 5_000
  for (;;) {
    const channel = (await setupOf.api.get(`/channels/${setupOf.channelId}`)).data
    if (channel.status === "paused" || Date.now() > deadline) return channel
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Posts Meta's signed status notification for `wamid` naming message `id` to the handler. */
const notifyStatus = (setupOf: Setup, options: { readonly wamid: string; readonly id: string; readonly to: string }) =>
  postWebhook(
    setupOf,
    JSON.stringify(
      statusPayload({ number: setupOf.number, wamid: options.wamid, status: "sent", recipient_id: options.to, biz_opaque_callback_data: options.id })
    )
  )

describe("the inline first attempt (docs/messaging.md \"The send queue\")", () => {
  it("accepted at once: 200 sent with Meta's id, attempts 1, nothing left for the queue", async () => {
    const setupOf = await setup()
    const sent = await sendTemplateAttempted(setupOf, phone(1))
    expect([sent.status, sent.message, sent.data.status, sent.data.next_attempt_at, sent.data.failure]).toEqual([200, "Message sent", "sent", null, null])
    const [request] = requestsFor(setupOf, sent.data.message_id)
    expect(sent.data.provider_message_id).toMatch(/^wamid\./)
    expect(request).toBeDefined()
    expect((await setupOf.api.get(`/messages/${sent.data.message_id}`)).data).toMatchObject({ status: "sent", attempts: 1, next_attempt_at: null })
  })

  it("an attempt late for its pacing slot (a store slow after the message was written) answers the hand-back, nothing sent; the dispatcher sends it", async () => {
    const inner = await Effect.runPromise(Effect.provide(Storage, makeSharedStorage()))
    const slow = { next: false }
    const storage: StorageService = {
      ...inner,
      chats: {
        ...inner.chats,
        appendMessage: (organizationId, request) =>
          Effect.tap(inner.chats.appendMessage(organizationId, request), () => {
            if (!slow.next) return Effect.void
            slow.next = false
            return Effect.sleep(150)
          })
      }
    }
    const setupOf = await setup({ storage: Layer.succeed(Storage, storage) })
    slow.next = true
    const answer = await sendTemplate(setupOf.api, phone(15))
    expect([answer.status, answer.message, answer.data.status, answer.data.failure, answer.data.provider_message_id]).toEqual([200, "Message queued", "queued", null, null])
    expect(isHandedBack(answer)).toBe(true)
    expect(requestsFor(setupOf, answer.data.message_id)).toHaveLength(0)
    const sent = await settledSend(setupOf.api, answer)
    expect([sent.message, sent.data.status, sent.data.failure, sent.data.transport]).toEqual(["Message sent", "sent", null, "whatsapp"])
    expect(sent.data.provider_message_id).toMatch(/^wamid\./)
    expect(requestsFor(setupOf, answer.data.message_id)).toHaveLength(1)
    expect((await setupOf.api.get(`/messages/${answer.data.message_id}`)).data).toMatchObject({ status: "sent", attempts: 1, provider_message_id: sent.data.provider_message_id })
  })

  it("503 twice, then accepted: queued with next_attempt_at, then sent after the retries; the stub received it three times", async () => {
    const setupOf = await setup()
    simulator().script.enqueue([{ http_status: 503 }, { http_status: 503 }])
    const queued = await sendTemplate(setupOf.api, phone(2))
    expect([queued.status, queued.message, queued.data.status]).toEqual([200, "Message queued", "queued"])
    // Handed back late for its pacing slot (a busy machine), the 503s meet the dispatcher's
    // attempts instead: the same three requests, the same end.
    if (!isHandedBack(queued)) {
      expect(Date.parse(queued.data.next_attempt_at)).toBeGreaterThan(Date.now() - 1_000)
      expect(queued.data.failure).toMatchObject({ code: "network_error" })
    }
    const sent = await messageWhen(setupOf.api, queued.data.message_id, (message) => message.status === "sent")
    expect(sent).toMatchObject({ attempts: 3, next_attempt_at: null, failure: null, provider_message_id: expect.stringMatching(/^wamid\./) })
    expect(requestsFor(setupOf, queued.data.message_id)).toHaveLength(3)
  })

  it("a permanent refusal (131026) is failed at once with Meta's code, attempts 1, never retried", async () => {
    const setupOf = await setup()
    simulator().script.enqueue([{ code: 131026 }])
    const failed = await sendTemplateAttempted(setupOf, phone(3))
    expect([failed.status, failed.data.status, failed.data.failure?.code]).toEqual([200, "failed", "131026"])
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect((await setupOf.api.get(`/messages/${failed.data.message_id}`)).data).toMatchObject({ status: "failed", attempts: 1 })
    expect(requestsFor(setupOf, failed.data.message_id)).toHaveLength(1)
  })

  it("transient failures past the retry schedule end failed with the last error (1 + 3 attempts)", async () => {
    const setupOf = await setup()
    simulator().script.enqueue([{ code: 131000, http_status: 500 }, { http_status: 502 }, { http_status: 503 }, { code: 2, http_status: 503 }])
    const queued = await sendTemplate(setupOf.api, phone(4))
    expect(queued.data.status).toBe("queued")
    const failed = await messageWhen(setupOf.api, queued.data.message_id, (message) => message.status === "failed")
    expect(failed).toMatchObject({ attempts: 4, failure: { code: "2" }, next_attempt_at: null })
    expect(requestsFor(setupOf, queued.data.message_id)).toHaveLength(4)
  })
})

describe("throttles and pair-rate refusals (docs/messaging.md \"Classes of failure\")", () => {
  it("throttles (130429, 80007) then accepted: sent, and throttles never count as attempts; the channel cooled down 1 s, then 2 s", async () => {
    const setupOf = await setup()
    simulator().script.enqueue([{ code: 130429 }, { code: 80007 }])
    const queued = await sendTemplate(setupOf.api, phone(5))
    expect(queued.data.status).toBe("queued")
    const sent = await messageWhen(setupOf.api, queued.data.message_id, (message) => message.status === "sent")
    expect(sent.attempts).toBe(1)
    const times = requestsFor(setupOf, queued.data.message_id).map((each) => each.at_ms)
    expect(times).toHaveLength(3)
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(950)
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(1_950)
  }, 20_000)

  it("a pair-rate refusal (131056) holds only that recipient, for 6 s; another recipient goes at once", async () => {
    const setupOf = await setup()
    simulator().script.enqueue([{ code: 131056 }])
    const held = await sendTemplateAttempted(setupOf, phone(6), "#1", (message) => message.failure !== null)
    expect(held.data.status).toBe("queued")
    expect(Date.parse(held.data.next_attempt_at) - Date.now()).toBeGreaterThan(5_000)
    const other = await sendTemplateAttempted(setupOf, phone(7))
    expect(other.data.status).toBe("sent")
    const behind = await sendTemplate(setupOf.api, phone(6), "#2")
    expect(behind.data.status).toBe("queued")
    // The held one is cancelled; the one behind it is then the head of its lane and goes.
    expect((await setupOf.api.post(`/messages/${held.data.message_id}/cancel`, {})).data).toMatchObject({
      status: "failed",
      failure: { code: "cancelled" }
    })
    await messageWhen(setupOf.api, behind.data.message_id, (message) => message.status === "sent")
    expect(requestsFor(setupOf, held.data.message_id)).toHaveLength(1)
  })

  it("messages to one recipient go out in creation order, one at a time", async () => {
    const setupOf = await setup()
    simulator().script.enqueue([{ http_status: 503 }])
    const to = phone(8)
    const first = await sendTemplate(setupOf.api, to, "#1")
    expect(first.data.status).toBe("queued")
    const rest = []
    for (let index = 2; index <= 5; index++) rest.push(await sendTemplate(setupOf.api, to, `#${index}`))
    expect(rest.map((each) => each.data.status)).toEqual(["queued", "queued", "queued", "queued"])
    const ids = [first, ...rest].map((each) => each.data.message_id as string)
    await messageWhen(setupOf.api, ids[4]!, (message) => message.status === "sent")
    const order = simulator()
      .sends(setupOf.number.phone_number_id)
      .map((each) => (each.body as { biz_opaque_callback_data?: string }).biz_opaque_callback_data)
      .filter((id) => ids.includes(id!))
    expect(order).toEqual([ids[0], ...ids])
  })
})

describe("unknown outcomes (docs/messaging.md \"Unknown outcomes\")", () => {
  it("a timed-out attempt answers sending; Meta's status notification naming the message settles it, never sent again", async () => {
    const setupOf = await setup()
    simulator().script.enqueue([{ drop: "hang" }])
    const to = phone(9)
    const pending = await sendTemplateAttempted(setupOf, to, "#1", (message) => message.status === "sending" && message.attempts === 1)
    expect([pending.message, pending.data.status]).toEqual(["Message queued", "sending"])
    expect(Date.parse(pending.data.next_attempt_at)).toBeGreaterThan(Date.now())
    await notifyStatus(setupOf, { wamid: "wamid.settled-by-notification", id: pending.data.message_id, to })
    const settled = (await setupOf.api.get(`/messages/${pending.data.message_id}`)).data
    expect(settled).toMatchObject({ status: "sent", provider_message_id: "wamid.settled-by-notification", next_attempt_at: null, attempts: 1 })
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(requestsFor(setupOf, pending.data.message_id)).toHaveLength(1)
  })

  it("a connection lost after the request was written, with no notification: retried after the settle time (the one case that may deliver twice)", async () => {
    const setupOf = await setup()
    simulator().script.enqueue([{ drop: "close" }])
    const pending = await sendTemplateAttempted(setupOf, phone(10), "#1", (message) => message.status === "sending" && message.attempts === 1)
    expect(pending.data.status).toBe("sending")
    const sent = await messageWhen(setupOf.api, pending.data.message_id, (message) => message.status === "sent")
    expect(sent.attempts).toBe(2)
    expect(requestsFor(setupOf, pending.data.message_id)).toHaveLength(2)
  })

  it("a send behind an attempt in flight to the same recipient answers queued", async () => {
    const setupOf = await setup()
    simulator().script.enqueue([{ delay_ms: 300 }])
    const to = phone(11)
    const [first, second] = await Promise.all([
      sendTemplate(setupOf.api, to, "#1"),
      new Promise((resolve) => setTimeout(resolve, 100)).then(() => sendTemplate(setupOf.api, to, "#2"))
    ])
    // The point is the second's answer. The first's own answer is "sent", or on a busy machine
    // the hand-back of an attempt late for its pacing slot, or "sending" (past the 400 ms
    // timeout); either way it ends sent.
    expect(second.data.status).toBe("queued")
    expect(first.data.status === "sent" || first.data.status === "sending" || isHandedBack(first), JSON.stringify(first)).toBe(true)
    await messageWhen(setupOf.api, first.data.message_id, (message) => message.status === "sent")
    await messageWhen(setupOf.api, second.data.message_id, (message) => message.status === "sent")
  })
})

describe("account errors pause the channel (docs/channels.md \"Pause and resume\")", () => {
  it("131031 pauses the channel; its messages wait; POST /channels/{uuid}/resume sends them", async () => {
    const setupOf = await setup()
    simulator().script.enqueue([{ code: 131031 }])
    const held = await sendTemplate(setupOf.api, phone(12))
    expect(held.data.status).toBe("queued")
    await pausedChannel(setupOf)
    const later = await sendTemplate(setupOf.api, phone(13))
    expect(later.data.status).toBe("queued")
    const paused = (await setupOf.api.get(`/channels/${setupOf.channelId}`)).data
    expect(paused).toMatchObject({
      status: "paused",
      paused_reason: { code: "131031" },
      paused_at: expect.any(String),
      queue: { queued: 2, sending: 0, oldest_queued_at: expect.any(String) }
    })
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(requestsFor(setupOf, later.data.message_id)).toHaveLength(0)
    const resumed = await setupOf.api.post(`/channels/${setupOf.channelId}/resume`, {})
    expect([resumed.status, resumed.message, resumed.data.status, resumed.data.paused_reason]).toEqual([200, "Channel resumed", "active", null])
    for (const id of [held.data.message_id, later.data.message_id]) {
      expect(await messageWhen(setupOf.api, id, (message) => message.status === "sent")).toMatchObject({ attempts: 1 })
    }
    expect((await setupOf.api.get(`/channels/${setupOf.channelId}`)).data.queue).toEqual({ queued: 0, sending: 0, oldest_queued_at: null })
  })
})

describe("a pause and the messages already claimed (docs/messaging.md \"The send queue\")", () => {
  it("the dispatcher that recorded a pause sends none of the messages it had claimed for the channel; they wait for the resume", async () => {
    // 5 messages/s: slots 210 ms apart, and each claim holds the next 500 ms of them, so the
    // messages after the refused one were claimed before the pause was recorded.
    const setupOf = await setup({ throughputMps: 5 })
    simulator().script.enqueue([{}, { code: 131031 }])
    const sends = []
    for (let index = 0; index < 5; index++) sends.push(await sendTemplate(setupOf.api, phone(40 + index), `#${index}`))
    await pausedChannel(setupOf)
    await new Promise((resolve) => setTimeout(resolve, 1_200))
    // Two were attempted, the sent one and the refused one (in the order asked, unless a
    // loaded machine handed one back late for its slot and the next took it); none after.
    expect(sends.map((each) => requestsFor(setupOf, each.data.message_id).length).sort()).toEqual([0, 0, 0, 1, 1])
    expect((await setupOf.api.get(`/channels/${setupOf.channelId}`)).data.queue).toMatchObject({ queued: 4, sending: 0 })
    await setupOf.api.post(`/channels/${setupOf.channelId}/resume`, {})
    for (const each of sends) {
      expect(await messageWhen(setupOf.api, each.data.message_id, (message) => message.status === "sent")).toMatchObject({ attempts: 1 })
    }
  })
})

describe("resuming with a new token, and dispatching elsewhere", () => {
  it("PUT /channels/{uuid} with a new access_token (verified with Meta) resumes a paused channel; its messages go", async () => {
    const setupOf = await setup()
    simulator().script.enqueue([{ code: 190, http_status: 401 }])
    const held = await sendTemplate(setupOf.api, phone(30))
    expect(held.data.status).toBe("queued")
    await pausedChannel(setupOf)
    expect((await setupOf.api.get(`/channels/${setupOf.channelId}`)).data).toMatchObject({ status: "paused", paused_reason: { code: "190" } })
    const updated = await setupOf.api.put(`/channels/${setupOf.channelId}`, { throughput_mps: 900 })
    expect(updated.data).toMatchObject({ status: "paused", throughput_mps: 900 })
    const renewed = await setupOf.api.put(`/channels/${setupOf.channelId}`, { access_token: setupOf.number.access_token })
    expect(renewed.data).toMatchObject({ status: "active", paused_reason: null, paused_at: null })
    expect(await messageWhen(setupOf.api, held.data.message_id, (message) => message.status === "sent")).toMatchObject({ attempts: 1 })
  })

  it("dispatch: { messages: false } leaves queued messages to runDispatchers, which sends them from another runtime", async () => {
    const setupOf = await setup({ dispatch: { messages: false } })
    simulator().script.enqueue([{ http_status: 503 }])
    const queued = await sendTemplate(setupOf.api, phone(31))
    expect(queued.data.status).toBe("queued")
    await new Promise((resolve) => setTimeout(resolve, 300))
    // Handed back late for its pacing slot (a busy machine), nothing was attempted here, and
    // the 503 meets runDispatchers' first attempt instead: the same two attempts in the end.
    expect(requestsFor(setupOf, queued.data.message_id)).toHaveLength(isHandedBack(queued) ? 0 : 1)
    const dispatchers = runDispatchers({
      storage: setupOf.storage,
      secretKey: SECRET_KEY,
      graphApi: { baseUrl: simulator().url, apiVersion: "v21.0" },
      sendQueue: SEND_QUEUE,
      dispatch: { webhooks: false },
      logger: false
    })
    try {
      await dispatchers.ready
      expect(await messageWhen(setupOf.api, queued.data.message_id, (message) => message.status === "sent")).toMatchObject({ attempts: 2 })
      expect(dispatchers.lastPassesEndedAt()).toMatchObject({ webhooks: null, messages: expect.any(Date) })
    } finally {
      await dispatchers.stop()
    }
  })
})

describe("retry and cancel (docs/messaging.md \"Retry and cancel\")", () => {
  it("a failed message retried is a real new attempt; other statuses are 409; another organization's message is 404", async () => {
    const setupOf = await setup()
    simulator().script.enqueue([{ code: 131026 }])
    const failed = await sendTemplateAttempted(setupOf, phone(14))
    expect(failed.data.status).toBe("failed")
    const retried = await setupOf.api.post(`/messages/${failed.data.message_id}/retry`, {})
    expect([retried.status, retried.data.status, retried.data.attempts, retried.data.failure]).toEqual([200, "queued", 0, null])
    await messageWhen(setupOf.api, failed.data.message_id, (message) => message.status === "sent")
    expect(requestsFor(setupOf, failed.data.message_id)).toHaveLength(2)
    const again = await setupOf.api.post(`/messages/${failed.data.message_id}/retry`, {})
    expect([again.status, again.errors[0]?.code]).toEqual([409, "message_not_retryable"])
    const cancel = await setupOf.api.post(`/messages/${failed.data.message_id}/cancel`, {})
    expect([cancel.status, cancel.errors[0]?.code]).toEqual([409, "message_not_cancellable"])
    const other = await setup()
    expect((await other.api.post(`/messages/${failed.data.message_id}/retry`, {})).status).toBe(404)
    expect((await other.api.post(`/messages/${failed.data.message_id}/cancel`, {})).status).toBe(404)
  })
})

describe("pacing (docs/channels.md \"Throughput\")", () => {
  it("a channel at 5 messages/s never gets more than 5 sends into any one-second window", async () => {
    const setupOf = await setup({ throughputMps: 5 })
    // One after another, as a client would: the simulator measures when each request arrives,
    // so this process (which also runs the dispatcher) must not be saturated by the test itself.
    const sends = []
    for (let index = 0; index < 15; index++) sends.push(await sendTemplate(setupOf.api, phone(100 + index)))
    expect(sends.every((each) => each.status === 200)).toBe(true)
    for (const each of sends) await messageWhen(setupOf.api, each.data.message_id, (message) => message.status === "sent")
    const arrivals = simulator().sends(setupOf.number.phone_number_id).map((each) => each.at_ms)
    expect(arrivals).toHaveLength(15)
    expect(maxInWindow(arrivals, 1000)).toBeLessThanOrEqual(5)
  }, 20_000)
})
