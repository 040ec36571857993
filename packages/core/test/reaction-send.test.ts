import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Option, TestClock } from "effect"
import {
  Chats,
  Messaging,
  type MessageId,
  type OrganizationId,
  Organizations,
  runLeasedPass,
  sendQueue,
  Storage
} from "@switchboard/core"
import { failureOf } from "./failure.js"
import { useSimulatorSends } from "./simulatorSends.js"

// The business's reaction (docs/messaging.md "Reactions"): Messaging.react refuses what it
// cannot send with nothing written, sends Meta's reaction through the target's channel, and
// the target's `reactions` shows it once Meta accepted it ("" takes it back).

const TOKEN = "EAAGsimulator-reaction-send-0001"
const NUMBER = { phone_number_id: "106540352242988", display_phone_number: "+1 555-078-3888", waba_id: "102290129340388", access_token: TOKEN }
const CUSTOMER = "+16505551234"

const fixture = useSimulatorSends(NUMBER)
const { run, addChannel, findMessage } = fixture

const createOrganization = Effect.map(Effect.flatMap(Organizations, (organizations) => organizations.create({ name: "Acme" })), (org) => org.id)

/** The reaction's settled outcome: `react`, then, when its attempt in the request was
 * handed back late for its pacing slot (a busy machine: docs/messaging.md "The send
 * queue"), the send queue's passes until it is sent; the target as it then stands. */
const reactSettled = (organizationId: OrganizationId, id: MessageId, emoji: string) =>
  Effect.gen(function* () {
    const messaging = yield* Messaging
    const result = yield* messaging.react(organizationId, id, { emoji })
    // At most 10 s: a pass finds it due only once its new pacing slot has come.
    for (let pass = 0; pass < 200; pass++) {
      const reaction = yield* findMessage(organizationId, result.reaction.message_id)
      if (reaction.status !== "queued" && reaction.status !== "sending") {
        return { ...result, reaction: { ...result.reaction, status: reaction.status }, message: yield* findMessage(organizationId, id) }
      }
      yield* Effect.flatMap(Clock.currentTimeMillis, (now) => runLeasedPass(sendQueue, now, 60_000, 100))
      yield* Effect.sleep("50 millis")
    }
    return result
  })

/** The uuid every refused reaction is asked under (an Idempotency-Key's): no row with it may exist afterwards. */
const REFUSED_UUID = "6b1f3f3e-0c1a-4d3e-9a57-3b8e25e3a0ff" as MessageId

/** The error `react` fails with under {@link REFUSED_UUID}, after checking that no reaction row was written. */
const refusal = (organizationId: OrganizationId, id: MessageId, emoji: unknown) =>
  Effect.gen(function* () {
    const error = yield* failureOf(Effect.flatMap(Messaging, (messaging) => messaging.react(organizationId, id, { emoji }, { messageUuid: REFUSED_UUID })))
    const storage = yield* Storage
    expect(Option.isNone(yield* storage.chats.findMessage(organizationId, REFUSED_UUID))).toBe(true)
    return error as { readonly _tag: string; readonly reason?: string }
  })

/** The customer's inbound message, received through Messaging.receive (no channel unless given). */
const customerWrote = (organizationId: OrganizationId, wamid: string | undefined, channelId?: string) =>
  Effect.map(Effect.flatMap(Messaging, (messaging) =>
    messaging.receive(organizationId, {
      phone: CUSTOMER,
      type: "text",
      text: "Is my order ready?",
      ...(wamid === undefined ? {} : { provider_message_id: wamid }),
      ...(channelId === undefined ? {} : { channel_uuid: channelId })
    })), (receipt) => receipt.message)

describe("Messaging.react through a channel and the simulator", () => {
  it.live("sends Meta's reaction; the target shows it by business once sent; \"\" takes it back", () =>
    run(Effect.gen(function* () {
      const organizationId = yield* createOrganization
      const channel = yield* addChannel(organizationId)
      const target = yield* customerWrote(organizationId, "wamid.reaction-target-0001", channel.uuid)
      const storage = yield* Storage
      const result = yield* reactSettled(organizationId, target.uuid, "👍")
      expect([result.reaction.status, result.reaction.transport]).toEqual(["sent", "whatsapp"])
      expect(result.message.uuid).toBe(target.uuid)
      expect(result.message.reactions).toEqual([{ emoji: "👍", by: "business", at: expect.any(String) }])
      const [sent] = fixture.simulator.sends(NUMBER.phone_number_id)
      expect(sent!.body).toMatchObject({ to: "16505551234", type: "reaction", reaction: { message_id: target.provider_message_id, emoji: "👍" } })
      // The reaction row is kept in the send queue but never listed.
      const row = yield* findMessage(organizationId, result.reaction.message_id)
      expect(row).toMatchObject({ type: "reaction", direction: "outbound", status: "sent", content: { reaction: { message_id: target.provider_message_id, emoji: "👍", target_uuid: target.uuid } } })
      const listed = yield* Effect.flatMap(Chats, (chats) => chats.listMessages(organizationId, target.chat_uuid, {}))
      expect(listed.messages.map((message) => message.uuid)).toEqual([target.uuid])
      // Replaced, then removed.
      const replaced = yield* reactSettled(organizationId, target.uuid, "🎉")
      expect(replaced.message.reactions).toEqual([{ emoji: "🎉", by: "business", at: expect.any(String) }])
      const removed = yield* reactSettled(organizationId, target.uuid, "")
      expect(removed.reaction.status).toBe("sent")
      expect(removed.message.reactions).toEqual([])
      expect(fixture.simulator.sends(NUMBER.phone_number_id).at(-1)!.body).toMatchObject({ type: "reaction", reaction: { message_id: target.provider_message_id, emoji: "" } })
      expect((yield* storage.chats.findMessage(organizationId, target.uuid)).pipe(Option.map((message) => message.reactions))).toEqual(Option.some([]))
    })))
})

describe("Messaging.react refusals: no reaction row written, the target unchanged", () => {
  it.effect("emoji not one emoji: InvalidInput naming emoji", () =>
    run(Effect.gen(function* () {
      const organizationId = yield* createOrganization
      yield* addChannel(organizationId)
      const target = yield* customerWrote(organizationId, "wamid.refusal-0001")
      for (const emoji of ["ok", "👍👍", "a👍", 42, null, undefined]) {
        expect(yield* refusal(organizationId, target.uuid, emoji)).toMatchObject({ _tag: "InvalidInput", issues: [{ field: "emoji" }] })
      }
      expect((yield* findMessage(organizationId, target.uuid)).reactions).toEqual([])
    })))

  it.effect("an unknown message, or another organization's: RecordNotFound", () =>
    run(Effect.gen(function* () {
      const organizationId = yield* createOrganization
      const other = yield* createOrganization
      const target = yield* customerWrote(organizationId, "wamid.refusal-0002")
      const unknown = yield* refusal(organizationId, "8f0f0b5e-1f7c-4a57-9a07-3b8e25e3a001" as MessageId, "👍")
      expect(unknown).toMatchObject({ _tag: "RecordNotFound", missing: [{ resource: "message" }] })
      expect(yield* refusal(other, target.uuid, "👍")).toMatchObject({ _tag: "RecordNotFound" })
      expect((yield* findMessage(organizationId, target.uuid)).reactions).toEqual([])
    })))

  it.effect("no provider id, a reaction row, no channel, too old: MessageNotReactable with its reason", () =>
    run(Effect.gen(function* () {
      const organizationId = yield* createOrganization
      const messaging = yield* Messaging
      // Received without a provider id.
      const anonymous = yield* customerWrote(organizationId, undefined)
      expect(yield* refusal(organizationId, anonymous.uuid, "👍")).toMatchObject({ _tag: "MessageNotReactable", reason: "no_provider_id" })
      // The customer's own reaction row (to a message the store does not have).
      const receipt = yield* messaging.receive(organizationId, {
        phone: CUSTOMER,
        type: "reaction",
        content: { reaction: { message_id: "wamid.elsewhere", emoji: "❤️" } },
        provider_message_id: "wamid.refusal-reaction"
      })
      expect(yield* refusal(organizationId, receipt.message.uuid, "👍")).toMatchObject({ _tag: "MessageNotReactable", reason: "not_a_message" })
      // No channel at all: the recording transport would take it, but there is nothing to send it through.
      const target = yield* customerWrote(organizationId, "wamid.refusal-0003")
      expect(yield* refusal(organizationId, target.uuid, "👍")).toMatchObject({ _tag: "MessageNotReactable", reason: "no_channel" })
      // More than 30 days old, even with a channel now.
      yield* addChannel(organizationId)
      yield* TestClock.adjust("30 days")
      yield* TestClock.adjust("1 second")
      expect(yield* refusal(organizationId, target.uuid, "👍")).toMatchObject({ _tag: "MessageNotReactable", reason: "too_old" })
      expect((yield* findMessage(organizationId, target.uuid)).reactions).toEqual([])
    })))

  it.effect("the contact's window on the target's channel closed: OutsideCustomerServiceWindow, nothing sent", () =>
    run(Effect.gen(function* () {
      const organizationId = yield* createOrganization
      const channel = yield* addChannel(organizationId)
      const target = yield* customerWrote(organizationId, "wamid.refusal-0004", channel.uuid)
      yield* TestClock.adjust("25 hours")
      const refused = yield* refusal(organizationId, target.uuid, "👍")
      expect(refused).toMatchObject({ _tag: "OutsideCustomerServiceWindow", channel_uuid: channel.uuid })
      expect(fixture.simulator.sends()).toEqual([])
      expect((yield* findMessage(organizationId, target.uuid)).reactions).toEqual([])
    })))
})
