import { describe, expect, it } from "vitest"
import { checkInteractive, codePointLength, interactiveForProvider, interactiveStoredMedia } from "@switchboard/core"

// Reading `POST /send/interactive`'s object (docs/messaging.md "Interactive messages"): each
// of WhatsApp's limits is one issue naming the field by its path; lengths count code points.

const buttons = (count: number, title = (index: number) => `Option ${index + 1}`) =>
  Array.from({ length: count }, (_, index) => ({ type: "reply", reply: { id: `opt-${index + 1}`, title: title(index) } }))

const buttonMessage = (extra: Record<string, unknown> = {}, action: Record<string, unknown> = { buttons: buttons(2) }) => ({
  type: "button",
  body: { text: "Does Tuesday suit you?" },
  action,
  ...extra
})

const rows = (count: number, prefix = "row") =>
  Array.from({ length: count }, (_, index) => ({ id: `${prefix}-${index + 1}`, title: `Row ${index + 1}` }))

const listMessage = (sections: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) => ({
  type: "list",
  body: { text: "Pick a delivery slot" },
  action: { button: "See slots", sections },
  ...extra
})

const ctaMessage = (parameters: Record<string, unknown> = { display_text: "Track order", url: "https://example.com/t/42" }) => ({
  type: "cta_url",
  body: { text: "Your parcel is on its way" },
  action: { name: "cta_url", parameters }
})

/** The fields (paths) of the issues of `value`, in order. */
const fieldsOf = (value: unknown) => checkInteractive(value).issues.map((issue) => issue.field)

/** `count` code points, each an emoji of two UTF-16 units. */
const emojis = (count: number) => "😀".repeat(count)

describe("checkInteractive: button", () => {
  it("a well-formed message reads as given, its unknown properties dropped", () => {
    const given = buttonMessage({ footer: { text: "Reply below", colour: "red" }, header: { type: "text", text: "Delivery" }, extra: 1 })
    const { interactive, issues } = checkInteractive(given)
    expect(issues).toEqual([])
    expect(interactive).toEqual({
      type: "button",
      header: { type: "text", text: "Delivery" },
      body: { text: "Does Tuesday suit you?" },
      footer: { text: "Reply below" },
      action: { buttons: buttons(2) }
    })
  })

  it("1 to 3 buttons", () => {
    expect(fieldsOf(buttonMessage({}, { buttons: buttons(3) }))).toEqual([])
    expect(fieldsOf(buttonMessage({}, { buttons: buttons(4) }))).toEqual(["interactive.action.buttons"])
    expect(fieldsOf(buttonMessage({}, { buttons: [] }))).toEqual(["interactive.action.buttons"])
    expect(fieldsOf(buttonMessage({}, {}))).toEqual(["interactive.action.buttons"])
    expect(fieldsOf({ ...buttonMessage(), action: undefined })).toEqual(["interactive.action"])
    expect(checkInteractive(buttonMessage({}, { buttons: buttons(4) })).issues[0]).toMatchObject({ code: "out_of_range" })
  })

  it("a title of at most 20 code points, an id of at most 256, ids unique", () => {
    expect(fieldsOf(buttonMessage({}, { buttons: buttons(2, (index) => (index === 1 ? emojis(20) : "Yes")) }))).toEqual([])
    expect(fieldsOf(buttonMessage({}, { buttons: buttons(2, (index) => (index === 1 ? emojis(21) : "Yes")) }))).toEqual([
      "interactive.action.buttons[1].reply.title"
    ])
    const longId = [{ type: "reply", reply: { id: "i".repeat(257), title: "Yes" } }]
    expect(fieldsOf(buttonMessage({}, { buttons: longId }))).toEqual(["interactive.action.buttons[0].reply.id"])
    expect(fieldsOf(buttonMessage({}, { buttons: [{ type: "reply", reply: { id: "i".repeat(256), title: "Yes" } }] }))).toEqual([])
    const twice = [{ type: "reply", reply: { id: "same", title: "Yes" } }, { type: "reply", reply: { id: "same", title: "No" } }]
    expect(fieldsOf(buttonMessage({}, { buttons: twice }))).toEqual(["interactive.action.buttons[1].reply.id"])
  })

  it("each button is {type: reply, reply: {id, title}}", () => {
    const wrong = [{ type: "url", reply: { id: "a", title: "A" } }, { type: "reply" }, { type: "reply", reply: { id: "c", title: "  " } }]
    expect(fieldsOf(buttonMessage({}, { buttons: wrong }))).toEqual([
      "interactive.action.buttons[0].type",
      "interactive.action.buttons[1].reply",
      "interactive.action.buttons[2].reply.title"
    ])
  })

  it("body.text is required, at most 1024 code points; footer.text at most 60", () => {
    expect(fieldsOf({ ...buttonMessage(), body: undefined })).toEqual(["interactive.body"])
    expect(fieldsOf({ ...buttonMessage(), body: { text: " " } })).toEqual(["interactive.body.text"])
    expect(fieldsOf({ ...buttonMessage(), body: { text: emojis(1024) } })).toEqual([])
    expect(fieldsOf({ ...buttonMessage(), body: { text: emojis(1025) } })).toEqual(["interactive.body.text"])
    expect(fieldsOf(buttonMessage({ footer: { text: "f".repeat(60) } }))).toEqual([])
    expect(fieldsOf(buttonMessage({ footer: { text: "f".repeat(61) } }))).toEqual(["interactive.footer.text"])
    expect(fieldsOf(buttonMessage({ footer: "Reply below" }))).toEqual(["interactive.footer"])
  })

  it("a header: text of at most 60, or an image, video or document by an http(s) link or a media_uuid", () => {
    expect(fieldsOf(buttonMessage({ header: { type: "text", text: "h".repeat(61) } }))).toEqual(["interactive.header.text"])
    expect(fieldsOf(buttonMessage({ header: { type: "image", image: { link: "https://example.com/a.png" } } }))).toEqual([])
    expect(fieldsOf(buttonMessage({ header: { type: "video", video: { link: "ftp://example.com/a.mp4" } } }))).toEqual(["interactive.header.video.link"])
    expect(fieldsOf(buttonMessage({ header: { type: "document", document: {} } }))).toEqual(["interactive.header.document.link"])
    expect(fieldsOf(buttonMessage({ header: { type: "image" } }))).toEqual(["interactive.header.image"])
    expect(fieldsOf(buttonMessage({ header: { type: "image", image: { media_uuid: "not-a-uuid" } } }))).toEqual([
      "interactive.header.image.media_uuid"
    ])
    const both = { link: "https://example.com/a.png", media_uuid: "8f0f0b5e-1f7c-4a57-9a07-3b8e25e3a001" }
    expect(fieldsOf(buttonMessage({ header: { type: "image", image: both } }))).toEqual(["interactive.header.image.link"])
    expect(fieldsOf(buttonMessage({ header: { type: "audio", audio: { link: "https://example.com/a.ogg" } } }))).toEqual([
      "interactive.header.type"
    ])
  })

  it("a media header by media_uuid is the stored file to upload; the transport gets the provider's id in its place", () => {
    const uuid = "8F0F0B5E-1F7C-4A57-9A07-3B8E25E3A001"
    const { interactive, issues } = checkInteractive(buttonMessage({ header: { type: "document", document: { media_uuid: uuid, filename: "menu.pdf" } } }))
    expect(issues).toEqual([])
    expect(interactiveStoredMedia(interactive!)).toEqual({ type: "document", media_uuid: uuid.toLowerCase() })
    expect(interactiveForProvider(interactive!, "4490709327")).toMatchObject({
      header: { type: "document", document: { id: "4490709327", filename: "menu.pdf" } }
    })
    expect(interactiveStoredMedia(checkInteractive(buttonMessage()).interactive!)).toBeUndefined()
  })
})

describe("checkInteractive: list", () => {
  it("a well-formed list with sections", () => {
    const sections = [
      { title: "Morning", rows: [{ id: "m1", title: "8–10", description: "Before work" }] },
      { title: "Evening", rows: rows(2, "e") }
    ]
    const { interactive, issues } = checkInteractive(listMessage(sections, { header: { type: "text", text: "Slots" } }))
    expect(issues).toEqual([])
    expect(interactive).toMatchObject({ type: "list", header: { type: "text", text: "Slots" }, action: { button: "See slots", sections } })
  })

  it("at most 10 rows in all sections: 11 are refused on interactive.action.sections", () => {
    expect(fieldsOf(listMessage([{ rows: rows(10) }]))).toEqual([])
    expect(fieldsOf(listMessage([{ rows: rows(11) }]))).toEqual(["interactive.action.sections"])
    const split = [{ title: "A", rows: rows(6, "a") }, { title: "B", rows: rows(5, "b") }]
    const issues = checkInteractive(listMessage(split)).issues
    expect(issues).toEqual([{ code: "out_of_range", field: "interactive.action.sections", message: expect.stringContaining("at most 10 rows") }])
  })

  it("1 to 10 sections, each with rows; a section title (≤ 24) is required when there are several", () => {
    expect(fieldsOf(listMessage([]))).toEqual(["interactive.action.sections"])
    const eleven = Array.from({ length: 11 }, (_, index) => ({ title: `S${index}`, rows: [{ id: `r${index}`, title: "Row" }] }))
    expect(fieldsOf(listMessage(eleven))).toEqual(["interactive.action.sections", "interactive.action.sections"])
    expect(fieldsOf(listMessage([{ rows: [] }]))).toEqual(["interactive.action.sections[0].rows"])
    expect(fieldsOf(listMessage([{ title: "A", rows: rows(1, "a") }, { rows: rows(1, "b") }]))).toEqual(["interactive.action.sections[1].title"])
    expect(fieldsOf(listMessage([{ title: "t".repeat(25), rows: rows(1) }]))).toEqual(["interactive.action.sections[0].title"])
  })

  it("row ids (≤ 200) unique across the message, titles ≤ 24, descriptions ≤ 72", () => {
    const twice = [{ title: "A", rows: rows(1) }, { title: "B", rows: rows(1) }]
    expect(fieldsOf(listMessage(twice))).toEqual(["interactive.action.sections[1].rows[0].id"])
    const long = [{ rows: [{ id: "r".repeat(201), title: "t".repeat(25), description: "d".repeat(73) }] }]
    expect(fieldsOf(listMessage(long))).toEqual([
      "interactive.action.sections[0].rows[0].id",
      "interactive.action.sections[0].rows[0].title",
      "interactive.action.sections[0].rows[0].description"
    ])
    expect(fieldsOf(listMessage([{ rows: [{ id: "r".repeat(200), title: emojis(24), description: emojis(72) }] }]))).toEqual([])
  })

  it("the list button (≤ 20) is required; the body may be 4096 code points; the header is text only", () => {
    expect(fieldsOf({ ...listMessage([{ rows: rows(1) }]), action: { sections: [{ rows: rows(1) }] } })).toEqual(["interactive.action.button"])
    expect(fieldsOf({ ...listMessage([{ rows: rows(1) }]), action: { button: "b".repeat(21), sections: [{ rows: rows(1) }] } })).toEqual([
      "interactive.action.button"
    ])
    expect(fieldsOf(listMessage([{ rows: rows(1) }], { body: { text: emojis(4096) } }))).toEqual([])
    expect(fieldsOf(listMessage([{ rows: rows(1) }], { body: { text: emojis(4097) } }))).toEqual(["interactive.body.text"])
    expect(fieldsOf(listMessage([{ rows: rows(1) }], { header: { type: "image", image: { link: "https://example.com/a.png" } } }))).toEqual([
      "interactive.header.type"
    ])
  })
})

describe("checkInteractive: cta_url and the type", () => {
  it("display_text ≤ 20 and an http(s) url; action.name cta_url", () => {
    expect(fieldsOf(ctaMessage())).toEqual([])
    expect(fieldsOf(ctaMessage({ display_text: "d".repeat(21), url: "javascript:alert(1)" }))).toEqual([
      "interactive.action.parameters.display_text",
      "interactive.action.parameters.url"
    ])
    expect(fieldsOf({ ...ctaMessage(), action: { name: "open", parameters: { display_text: "Go", url: "https://example.com" } } })).toEqual([
      "interactive.action.name"
    ])
    expect(fieldsOf({ ...ctaMessage(), action: { name: "cta_url" } })).toEqual(["interactive.action.parameters"])
  })

  it("an unknown or missing type is refused on interactive.type; a non-object on interactive", () => {
    expect(checkInteractive({ type: "product_list", body: { text: "x" } }).issues).toEqual([
      { code: "invalid_format", field: "interactive.type", message: "interactive.type must be one of button, list, cta_url" }
    ])
    expect(fieldsOf({ body: { text: "x" } })).toEqual(["interactive.type"])
    expect(fieldsOf("buttons")).toEqual(["interactive"])
    expect(fieldsOf(undefined)).toEqual(["interactive"])
  })

  it("lengths count code points", () => {
    expect(codePointLength("😀é")).toBe(2)
    expect("😀é".length).toBe(3)
  })
})
