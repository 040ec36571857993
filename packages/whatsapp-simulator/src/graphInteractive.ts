// What Meta checks of an interactive send (`type: "interactive"`): reply buttons, lists and
// call-to-action URL buttons, with the limits of Meta's "Interactive messages" reference.
// A send that breaks one is refused with Meta's 131009 ("Parameter value is not valid") and
// `error_data.details` naming the parameter, as Meta does; lengths count characters (code
// points). Written apart from Switchboard's own checks, so tests can show the two agree.

/** Meta's limits on interactive messages, in characters and items. */
const LIMITS = {
  body: { button: 1024, list: 4096, cta_url: 1024 } as Readonly<Record<string, number>>,
  headerText: 60,
  footer: 60,
  buttons: 3,
  buttonId: 256,
  buttonTitle: 20,
  listButton: 20,
  sections: 10,
  rows: 10,
  rowId: 200,
  rowTitle: 24,
  rowDescription: 72,
  sectionTitle: 24,
  displayText: 20
}

/** The interactive types the simulator checks (Meta has more: products, flows, which it refuses as unsupported here). */
const TYPES = ["button", "list", "cta_url"]

/**
 * What is wrong with a send's `interactive` object, in Meta's words (the `details` of a
 * 131009), or `undefined` when Meta would accept it. `mediaIdKnown` tells whether a media
 * header's `id` names a file uploaded for the sending number.
 */
export const interactiveProblem = (interactive: unknown, mediaIdKnown: (id: string) => boolean): string | undefined => {
  if (!isObject(interactive)) return "Parameter interactive must be a JSON object."
  const type = interactive.type
  if (typeof type !== "string" || !TYPES.includes(type)) return `Parameter interactive.type is invalid: ${JSON.stringify(type)}.`
  const body = isObject(interactive.body) ? interactive.body : undefined
  const problems = [
    textProblem("interactive.body.text", body?.text, LIMITS.body[type]!),
    interactive.footer === undefined ? undefined : textProblem("interactive.footer.text", isObject(interactive.footer) ? interactive.footer.text : undefined, LIMITS.footer),
    interactive.header === undefined ? undefined : headerProblem(interactive.header, type, mediaIdKnown),
    actionProblem(interactive.action, type)
  ]
  return problems.find((problem) => problem !== undefined)
}

const headerProblem = (header: unknown, type: string, mediaIdKnown: (id: string) => boolean): string | undefined => {
  if (!isObject(header)) return "Parameter interactive.header must be a JSON object."
  if (header.type === "text") return textProblem("interactive.header.text", header.text, LIMITS.headerText)
  if (type === "list") return "Parameter interactive.header.type is invalid: a list message's header must be text."
  if (header.type !== "image" && header.type !== "video" && header.type !== "document") {
    return `Parameter interactive.header.type is invalid: ${JSON.stringify(header.type)}.`
  }
  const media = header[header.type]
  const where = `interactive.header.${header.type}`
  if (!isObject(media)) return `Parameter ${where} is required.`
  const hasId = media.id !== undefined
  const hasLink = media.link !== undefined
  if (hasId === hasLink) return `Parameter ${where} must have exactly one of id and link.`
  if (hasLink) return typeof media.link === "string" && isHttpUrl(media.link) ? undefined : `Parameter ${where}.link must be an http or https URL.`
  return typeof media.id === "string" && mediaIdKnown(media.id) ? undefined : `${where}.id ${JSON.stringify(media.id)} is not a media uploaded for this phone number.`
}

const actionProblem = (action: unknown, type: string): string | undefined => {
  if (!isObject(action)) return "Parameter interactive.action is required."
  switch (type) {
    case "button":
      return buttonsProblem(action.buttons)
    case "list":
      return textProblem("interactive.action.button", action.button, LIMITS.listButton) ?? sectionsProblem(action.sections)
    default: {
      if (action.name !== "cta_url") return "Parameter interactive.action.name must be cta_url."
      const parameters = isObject(action.parameters) ? action.parameters : {}
      const display = textProblem("interactive.action.parameters.display_text", parameters.display_text, LIMITS.displayText)
      if (display !== undefined) return display
      return typeof parameters.url === "string" && isHttpUrl(parameters.url) ? undefined : "Parameter interactive.action.parameters.url must be an http or https URL."
    }
  }
}

const buttonsProblem = (buttons: unknown): string | undefined => {
  if (!Array.isArray(buttons) || buttons.length < 1 || buttons.length > LIMITS.buttons) {
    return `Parameter interactive.action.buttons must have 1 to ${LIMITS.buttons} buttons.`
  }
  const ids = new Set<unknown>()
  for (const [index, button] of buttons.entries()) {
    const where = `interactive.action.buttons[${index}]`
    if (!isObject(button) || button.type !== "reply" || !isObject(button.reply)) return `Parameter ${where} must be {type: "reply", reply: {id, title}}.`
    const problem = textProblem(`${where}.reply.id`, button.reply.id, LIMITS.buttonId) ?? textProblem(`${where}.reply.title`, button.reply.title, LIMITS.buttonTitle)
    if (problem !== undefined) return problem
    if (ids.has(button.reply.id)) return `Parameter ${where}.reply.id is a duplicate: button ids must be unique.`
    ids.add(button.reply.id)
  }
  return undefined
}

const sectionsProblem = (sections: unknown): string | undefined => {
  if (!Array.isArray(sections) || sections.length < 1 || sections.length > LIMITS.sections) {
    return `Parameter interactive.action.sections must have 1 to ${LIMITS.sections} sections.`
  }
  const total = sections.reduce<number>((sum, section) => sum + (isObject(section) && Array.isArray(section.rows) ? section.rows.length : 0), 0)
  if (total > LIMITS.rows) return `Parameter interactive.action.sections: total row count ${total} exceeds the maximum of ${LIMITS.rows}.`
  const ids = new Set<unknown>()
  for (const [index, section] of sections.entries()) {
    const where = `interactive.action.sections[${index}]`
    if (!isObject(section) || !Array.isArray(section.rows) || section.rows.length === 0) return `Parameter ${where}.rows must have at least one row.`
    if (sections.length > 1 || section.title !== undefined) {
      const title = textProblem(`${where}.title`, section.title, LIMITS.sectionTitle)
      if (title !== undefined) return title
    }
    for (const [rowIndex, row] of section.rows.entries()) {
      const at = `${where}.rows[${rowIndex}]`
      if (!isObject(row)) return `Parameter ${at} must be a JSON object.`
      const problem =
        textProblem(`${at}.id`, row.id, LIMITS.rowId) ??
        textProblem(`${at}.title`, row.title, LIMITS.rowTitle) ??
        (row.description === undefined ? undefined : textProblem(`${at}.description`, row.description, LIMITS.rowDescription))
      if (problem !== undefined) return problem
      if (ids.has(row.id)) return `Parameter ${at}.id is a duplicate: row ids must be unique in a message.`
      ids.add(row.id)
    }
  }
  return undefined
}

/** A text of 1 to `max` characters (code points), or what is wrong with it. */
const textProblem = (where: string, value: unknown, max: number): string | undefined => {
  if (typeof value !== "string" || value.trim() === "") return `Parameter ${where} is required.`
  const length = [...value].length
  return length > max ? `Parameter ${where} is too long: ${length} characters, at most ${max}.` : undefined
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

const isHttpUrl = (text: string): boolean => {
  try {
    const url = new URL(text)
    return url.protocol === "http:" || url.protocol === "https:"
  } catch {
    return false
  }
}
