import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { readWhatsAppWebhook, type WhatsAppWebhookChange } from "@switchboard/core"

/** Fixtures in the shapes of Meta's webhook reference (test/fixtures/whatsapp/). */
const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`./fixtures/whatsapp/${name}.json`, import.meta.url), "utf8"))

const only = (name: string): WhatsAppWebhookChange => {
  const changes = readWhatsAppWebhook(fixture(name))
  expect(changes).toHaveLength(1)
  return changes![0]!
}

/** The `value` of a fixture's first change, as sent. */
const rawOf = (name: string) =>
  (fixture(name) as { entry: Array<{ changes: Array<{ value: { messages: Array<unknown>; statuses: Array<unknown> } }> }> }).entry[0]!
    .changes[0]!.value

const messageOf = (name: string) => {
  const change = only(name)
  if (change._tag !== "Messages") return expect.fail(`expected Messages, got ${change._tag}`)
  expect(change.phone_number_id).toBe("106540352242922")
  expect(change.messages).toHaveLength(1)
  return change.messages[0]!
}

describe("readWhatsAppWebhook: customers' messages", () => {
  it("a text: body, sender, profile name, WhatsApp's timestamp kept in content", () => {
    expect(messageOf("text")).toEqual({
      provider_message_id: "wamid.text1",
      from: "16505551234",
      profile_name: "Sheena Nelson",
      type: "text",
      text: "Does it come in another color?",
      media: null,
      content: { timestamp: "1749416383" },
      raw: rawOf("text").messages[0]
    })
  })

  it("a reply keeps its context", () => {
    expect(messageOf("text-reply").content).toEqual({
      timestamp: "1749416383",
      context: { from: "15550783881", id: "wamid.original" }
    })
  })

  it.each([
    ["image", { type: "image", id: "1003383421387256", mime_type: "image/jpeg", caption: "This one", sha256: "SFNCS1pIRkpHSEJXSEk=" }, "This one"],
    ["document", { type: "document", id: "1003383421387257", mime_type: "application/pdf", caption: "Invoice", filename: "invoice.pdf", sha256: "X0RFS0RKRks=" }, "Invoice"],
    ["audio", { type: "audio", id: "1003383421387258", mime_type: "audio/ogg; codecs=opus", sha256: "YXVkaW8=" }, null],
    ["video", { type: "video", id: "1003383421387259", mime_type: "video/mp4", sha256: "dmlkZW8=" }, null],
    ["sticker", { type: "sticker", id: "1003383421387260", mime_type: "image/webp", sha256: "c3RpY2tlcg==" }, null]
  ])("%s: the media id, MIME type and Meta's SHA-256 (no URL), the caption as text", (name, media, text) => {
    const message = messageOf(name)
    expect(message.type).toBe(name)
    expect(message.media).toEqual(media)
    expect(message.text).toBe(text)
  })

  /** The fixture `name` with its one message changed by `change`, read. */
  const readChanged = (name: string, change: (message: Record<string, unknown>) => Record<string, unknown>) => {
    const payload = fixture(name) as { entry: Array<{ changes: Array<{ value: { messages: Array<Record<string, unknown>> } }> }> }
    const value = payload.entry[0]!.changes[0]!.value
    value.messages = [change(value.messages[0]!)]
    const [read] = readWhatsAppWebhook(payload)!
    if (read?._tag !== "Messages") return expect.fail("expected Messages")
    return read.messages[0]!
  }
  const tooLargeError = { code: 131052, title: "Media download error", error_data: { details: "Unable to download the media sent by the user." } }

  it("131052 on a media message without an id: kept, its media too_large with no id, the errors in content", () => {
    const message = readChanged("image", ({ image, ...rest }) => ({ ...rest, image: { mime_type: (image as { mime_type: string }).mime_type }, errors: [tooLargeError] }))
    expect(message).toMatchObject({ type: "image", media: { type: "image", mime_type: "image/jpeg", too_large: true } })
    expect(message.media).not.toHaveProperty("id")
    expect(message.content.errors).toEqual([tooLargeError])
  })

  it("131052 on an unsupported message: a media message of its original type (else document), media too_large", () => {
    const asUnsupported = (type: string) =>
      readChanged("image", ({ image: _image, ...rest }) => ({ ...rest, type: "unsupported", errors: [{ ...tooLargeError, error_data: { details: type } }] }))
    expect(asUnsupported("x")).toMatchObject({ type: "document", media: { type: "document", too_large: true }, content: { original_type: "unsupported" } })
    const video = readChanged("video", ({ video: _video, ...rest }) => ({ ...rest, type: "video", errors: [tooLargeError] }))
    expect(video).toMatchObject({ type: "video", media: { type: "video", too_large: true } })
  })

  it("a media message without an id and without 131052 is refused, as before", () => {
    const payload = fixture("image") as { entry: Array<{ changes: Array<{ value: { messages: Array<Record<string, unknown>> } }> }> }
    const value = payload.entry[0]!.changes[0]!.value
    value.messages = [{ ...value.messages[0]!, image: { mime_type: "image/jpeg" } }]
    const [read] = readWhatsAppWebhook(payload)!
    if (read?._tag !== "Messages") return expect.fail("expected Messages")
    expect(read.messages).toEqual([])
    expect(read.refused.map((part) => part.reason)).toEqual(["image message without a media id"])
  })

  it.each([
    ["location", "location", "Main Campus", { latitude: 37.483307, longitude: -122.148981 }],
    ["contacts", "contacts", null, [{ name: { formatted_name: "Barbara Johnson" } }]],
    ["interactive-button-reply", "interactive", "Cancel order", { type: "button_reply", button_reply: { id: "cancel-order" } }],
    ["interactive-list-reply", "interactive", "Express shipping", { type: "list_reply", list_reply: { id: "priority-express" } }],
    ["button", "button", "Stop promotions", { payload: "Unsubscribe" }],
    ["reaction", "reaction", "👍", { message_id: "wamid.outbound1", emoji: "👍" }]
  ])("%s: its fields in content, a readable text", (name, type, text, fields) => {
    const message = messageOf(name)
    expect(message.type).toBe(type)
    expect(message.text).toBe(text)
    expect(message.media).toBeNull()
    expect(message.content[type]).toMatchObject(fields)
  })

  it("unsupported, and any type not listed (an order), are `unsupported` with the original type", () => {
    expect(messageOf("unsupported")).toMatchObject({
      type: "unsupported",
      text: null,
      content: { original_type: "unsupported", errors: [{ code: 131051 }] }
    })
    expect(messageOf("order")).toMatchObject({ type: "unsupported", content: { original_type: "order" } })
  })
})

describe("readWhatsAppWebhook: statuses and template updates", () => {
  it("statuses of the business's messages, in order", () => {
    const change = only("statuses")
    expect(change).toMatchObject({
      _tag: "Messages",
      messages: [],
      statuses: [
        { provider_message_id: "wamid.outbound1", status: "delivered", recipient: "16505551234", failure: null },
        { provider_message_id: "wamid.outbound1", status: "read", failure: null }
      ]
    })
  })

  it("a failed status carries the first error as {code, title}", () => {
    const change = only("status-failed")
    expect(change._tag === "Messages" && change.statuses[0]).toEqual({
      provider_message_id: "wamid.outbound2",
      status: "failed",
      recipient: "16505551234",
      failure: { code: "131047", title: "Re-engagement message" },
      callback_data: null,
      raw: rawOf("status-failed").statuses[0]
    })
  })

  it("a template status update is routed by the entry's WhatsApp Business Account id, with Meta's template id; reason NONE is null", () => {
    expect(only("template-approved")).toEqual({
      _tag: "TemplateStatus",
      waba_id: "102290129340398",
      provider_template_id: "594425479261596",
      name: "order_update",
      language: "en_US",
      status: "APPROVED",
      reason: null,
      raw: (fixture("template-approved") as { entry: Array<{ changes: Array<unknown> }> }).entry[0]!.changes[0]
    })
    expect(only("template-rejected")).toMatchObject({ status: "REJECTED", reason: "INVALID_FORMAT" })
  })

  it("other fields are ignored, by name", () => {
    expect(only("account-update")).toEqual({ _tag: "Ignored", field: "account_update" })
  })
})

describe("readWhatsAppWebhook: what is not Meta's shape", () => {
  it.each([null, [], "x", 1, {}, { object: "page", entry: [] }, { object: "whatsapp_business_account" }])(
    "%j is not a WhatsApp notification",
    (payload) => expect(readWhatsAppWebhook(payload)).toBeUndefined()
  )

  it("reports malformed parts as refused, with their raw JSON, instead of failing the whole batch", () => {
    const payload = {
      object: "whatsapp_business_account",
      entry: [
        null,
        { id: "1", changes: [null, { field: "messages" }, { field: "messages", value: { metadata: {} } }] },
        {
          id: "2",
          changes: [
            {
              field: "messages",
              value: {
                metadata: { phone_number_id: "42" },
                messages: [null, { id: "m1" }, { id: "m2", from: "1", type: "image", image: {} }, { id: "m3", from: "1", type: "text" }],
                statuses: [{ id: "s1", status: "bogus" }, { status: "read" }, { id: "s2", status: "sent" }]
              }
            }
          ]
        }
      ]
    }
    const changes = readWhatsAppWebhook(payload)!
    expect(changes.map((change) => change._tag)).toEqual(["Refused", "Refused", "Refused", "Refused", "Messages"])
    expect(changes.slice(0, 4).map((change) => change._tag === "Refused" && change.item)).toEqual([
      null,
      null,
      { field: "messages" },
      { field: "messages", value: { metadata: {} } }
    ])
    const last = changes[4]!
    if (last._tag !== "Messages") return expect.fail("expected Messages")
    expect(last.messages.map((message) => message.provider_message_id)).toEqual(["m3"])
    expect(last.statuses.map((status) => status.provider_message_id)).toEqual(["s2"])
    expect(last.refused.map((part) => part.item)).toEqual([
      null,
      { id: "m1" },
      { id: "m2", from: "1", type: "image", image: {} },
      { id: "s1", status: "bogus" },
      { status: "read" }
    ])
    expect(last.refused.every((part) => part.reason.length > 0)).toBe(true)
    // A field Switchboard does not handle is not refused: it is ignored.
    expect(readWhatsAppWebhook({ object: "whatsapp_business_account", entry: [{ id: "3", changes: [{ field: "account_update" }] }] })).toEqual([
      { _tag: "Ignored", field: "account_update" }
    ])
  })
})
