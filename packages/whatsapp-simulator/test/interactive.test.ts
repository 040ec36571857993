import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { interactiveReply, startSimulator, type WhatsAppSimulator } from "../src/index.js"
import { graph, startReceiver } from "./helpers.js"

// Interactive sends checked as Meta checks them (131009 with details naming the
// parameter), and the customer's tap on a button or a list row, replying to our message.

const TOKEN = "EAAGsimulator-interactive-token-0001"
const NUMBER = { phone_number_id: "106540352242922", display_phone_number: "+1 555-078-3881", waba_id: "102290129340398", access_token: TOKEN }

let simulator: WhatsAppSimulator
let receiver: Awaited<ReturnType<typeof startReceiver>>
beforeAll(async () => {
  receiver = await startReceiver()
  simulator = await startSimulator({ numbers: [NUMBER], webhookUrl: receiver.url, appSecret: "interactive-secret", statuses: [] })
})
afterEach(() => {
  simulator.reset()
  receiver.deliveries.length = 0
})
afterAll(async () => {
  await simulator.close()
  await receiver.close()
})

const send = (interactive: unknown) =>
  graph(simulator.url, `/v21.0/${NUMBER.phone_number_id}/messages`, TOKEN, {
    messaging_product: "whatsapp",
    recipient_type: "individual",
    to: "16505551234",
    type: "interactive",
    interactive
  })

/** The sends the simulator accepted (refused ones are received too, without a wamid). */
const accepted = () => simulator.sends().filter((each) => each.wamid !== null)

const rows = (count: number, prefix = "r") => Array.from({ length: count }, (_, index) => ({ id: `${prefix}${index}`, title: `Row ${index}` }))
const list = (sections: unknown, extra: Record<string, unknown> = {}) => ({
  type: "list",
  body: { text: "Pick a slot" },
  action: { button: "Slots", sections },
  ...extra
})
const buttons = (items: unknown, extra: Record<string, unknown> = {}) => ({ type: "button", body: { text: "Tuesday?" }, action: { buttons: items }, ...extra })
const reply = (id: string, title: string) => ({ type: "reply", reply: { id, title } })

/** The details of Meta's 131009 refusal of `interactive`, after checking its shape. */
const refusal = async (interactive: unknown) => {
  const answer = await send(interactive)
  expect(answer.status).toBe(400)
  expect(answer.json.error).toMatchObject({ code: 131009, message: "(#131009) Parameter value is not valid" })
  return answer.json.error.error_data.details as string
}

describe("interactive sends", () => {
  it("a reply-button, a list and a cta_url message within Meta's limits are accepted", async () => {
    const wellFormed = [
      buttons([reply("yes", "Yes 😀".padEnd(20, "!")), reply("no", "No")], { header: { type: "text", text: "Delivery" }, footer: { text: "Reply below" } }),
      list([{ title: "Morning", rows: rows(4, "m") }, { title: "Evening", rows: rows(6, "e") }]),
      { type: "cta_url", body: { text: "On its way" }, action: { name: "cta_url", parameters: { display_text: "Track", url: "https://example.com/t" } } },
      buttons([reply("a", "A")], { header: { type: "image", image: { link: "https://example.com/a.png" } } })
    ]
    for (const interactive of wellFormed) {
      const answer = await send(interactive)
      expect(answer.status).toBe(200)
      expect(answer.json.messages[0].id).toMatch(/^wamid\./)
    }
    expect(accepted().length).toBe(4)
  })

  it("a list with 11 rows in all is refused 131009 naming interactive.action.sections", async () => {
    expect(await refusal(list([{ rows: rows(11) }]))).toMatch(/^Parameter interactive\.action\.sections: total row count 11/)
    expect(await refusal(list([{ title: "A", rows: rows(6, "a") }, { title: "B", rows: rows(5, "b") }]))).toMatch(/total row count 11/)
    expect(accepted()).toEqual([])
  })

  it("each of Meta's limits is a 131009 naming the parameter", async () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [buttons([reply("a", "A"), reply("b", "B"), reply("c", "C"), reply("d", "D")]), "interactive.action.buttons"],
      [buttons([reply("a", "x".repeat(21))]), "interactive.action.buttons[0].reply.title"],
      [buttons([reply("a", "A"), reply("a", "B")]), "interactive.action.buttons[1].reply.id"],
      [buttons([reply("a", "A")], { body: { text: "b".repeat(1025) } }), "interactive.body.text"],
      [buttons([reply("a", "A")], { footer: { text: "f".repeat(61) } }), "interactive.footer.text"],
      [buttons([reply("a", "A")], { header: { type: "image", image: { id: "123456" } } }), "interactive.header.image.id"],
      [list([{ rows: rows(1) }, { rows: rows(1, "s") }]), "interactive.action.sections[0].title"],
      [list([{ rows: [{ id: "a", title: "t".repeat(25) }] }]), "interactive.action.sections[0].rows[0].title"],
      [list([{ rows: [{ id: "a", title: "A", description: "d".repeat(73) }] }]), "interactive.action.sections[0].rows[0].description"],
      [list([{ title: "A", rows: rows(1) }, { title: "B", rows: rows(1) }]), "interactive.action.sections[1].rows[0].id"],
      [list([{ rows: rows(1) }], { header: { type: "image", image: { link: "https://example.com/a.png" } } }), "interactive.header.type"],
      [{ type: "cta_url", body: { text: "x" }, action: { name: "cta_url", parameters: { display_text: "Go", url: "mailto:a@b.c" } } }, "interactive.action.parameters.url"],
      [{ type: "carousel", body: { text: "x" } }, "interactive.type"]
    ]
    for (const [interactive, parameter] of cases) expect(await refusal(interactive)).toContain(parameter)
    expect(accepted()).toEqual([])
  })
})

describe("the customer's tap", () => {
  it("interactiveReply with our wamid posts a button_reply or list_reply carrying context.id", async () => {
    const sent = await send(buttons([reply("yes", "Yes")]))
    const wamid = sent.json.messages[0].id as string
    await simulator.postInbound({ from: "16505551234", profile_name: "Sheena", message: interactiveReply("button_reply", { id: "yes", title: "Yes" }, wamid) })
    await simulator.postInbound({ from: "16505551234", profile_name: "Sheena", message: interactiveReply("list_reply", { id: "m1", title: "8–10", description: "Morning" }) })
    const [tap, pick] = receiver.deliveries.map((delivery) => JSON.parse(delivery.body).entry[0].changes[0].value.messages[0])
    expect(tap).toMatchObject({ type: "interactive", interactive: { type: "button_reply", button_reply: { id: "yes", title: "Yes" } }, context: { id: wamid } })
    expect(pick).toMatchObject({ type: "interactive", interactive: { type: "list_reply", list_reply: { id: "m1", title: "8–10", description: "Morning" } } })
    expect(pick).not.toHaveProperty("context")
  })
})
