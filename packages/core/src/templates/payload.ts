import { componentsOf, type Template, type TemplateComponent, type TemplatePayload, type TemplateSendComponent, type TemplateSendParameter, type TemplateSlot } from "../model/templates.js"
import { placeholdersOf } from "./placeholders.js"

// The send-ready payload of a template (docs/templates-and-replies.md):
// one send component per template part that takes parameters, one empty parameter per
// slot, in the WhatsApp Cloud API send format.

/** What one send component expects: its empty form, and each slot's type and example. */
export interface ExpectedComponent {
  /** `header`, `body`, or `button:<index>`: what a given send component is matched by. */
  readonly key: string
  readonly component: TemplateSendComponent
  readonly slots: ReadonlyArray<Omit<TemplateSlot, "component" | "index">>
}

/**
 * The send components a template takes, in template order: a `header` when the header
 * has media or a `{{1}}`, a `body` when the body has placeholders (one text parameter per
 * `{{n}}`), a `button` (`sub_type: "url"`) for each URL button whose url ends with
 * `{{1}}`. Quick-reply buttons take no slot (their optional payload is not a placeholder).
 * Only for a template without problems (`componentsOf`).
 */
export const expectedComponents = (template: Pick<Template, "components">): ReadonlyArray<ExpectedComponent> =>
  componentsOf(template).flatMap(expectedOf)

/**
 * The payload of `GET /templates/{uuid}/payload`: the `template` object with every slot
 * empty (`text: ""`, media `link: ""`) and the slots, where `component` and `index` locate
 * each one in `template.components[component].parameters[index]`.
 */
export const payloadOf = (template: Template): TemplatePayload => {
  const expected = expectedComponents(template)
  return {
    template: {
      name: template.name,
      language: { code: template.language },
      components: expected.map((entry) => entry.component)
    },
    slots: expected.flatMap((entry, component) => entry.slots.map((slot, index) => ({ component, index, ...slot })))
  }
}

/** An empty parameter of a slot type. */
export const emptyParameter = (type: TemplateSlot["type"]): TemplateSendParameter => {
  switch (type) {
    case "text":
      return { type, text: "" }
    case "image":
      return { type, image: { link: "" } }
    case "video":
      return { type, video: { link: "" } }
    case "document":
      return { type, document: { link: "" } }
  }
}

const expectedOf = (component: TemplateComponent): Array<ExpectedComponent> => {
  switch (component.type) {
    case "HEADER": {
      if (component.format !== "TEXT") {
        const type = component.format.toLowerCase() as "image" | "video" | "document"
        const example = component.example?.header_handle[0] ?? null
        return [sendComponent("header", { type: "header", parameters: [emptyParameter(type)] }, [{ type, example }])]
      }
      return textComponent("header", component.text, component.example?.header_text ?? [])
    }
    case "BODY":
      return textComponent("body", component.text, component.example?.body_text[0] ?? [])
    case "FOOTER":
      return []
    case "BUTTONS":
      return component.buttons.flatMap((button, index) =>
        button.type === "URL" && placeholdersOf(button.url).count === 1
          ? [
              sendComponent(
                `button:${index}`,
                { type: "button", sub_type: "url", index: String(index), parameters: [emptyParameter("text")] },
                [{ type: "text", example: button.example?.[0] ?? null }]
              )
            ]
          : []
      )
  }
}

const textComponent = (type: "header" | "body", text: string, examples: ReadonlyArray<string>): Array<ExpectedComponent> => {
  const { count } = placeholdersOf(text)
  if (count === 0) return []
  const slots = Array.from({ length: count }, (_, index) => ({ type: "text" as const, example: examples[index] ?? null }))
  return [sendComponent(type, { type, parameters: slots.map(() => emptyParameter("text")) }, slots)]
}

const sendComponent = (
  key: string,
  component: TemplateSendComponent,
  slots: ExpectedComponent["slots"]
): ExpectedComponent => ({ key, component, slots })
