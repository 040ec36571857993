import { Schema } from "effect"

/**
 * Identifier of a message template.
 *
 * @category models
 */
export const TemplateId = Schema.UUID.pipe(Schema.brand("TemplateId"))
/** @category models */
export type TemplateId = typeof TemplateId.Type

/**
 * Category of a template, as WhatsApp's template management names them
 * (docs/templates-and-replies.md "Records").
 *
 * @category models
 */
export const TemplateCategory = Schema.Literal("MARKETING", "UTILITY", "AUTHENTICATION")
/** @category models */
export type TemplateCategory = typeof TemplateCategory.Type

/**
 * Review status of a template: exactly the statuses Meta's template list answers
 * (docs/templates-and-replies.md "Records"). Only `APPROVED` templates can be sent (400
 * `template_not_approved` otherwise). Provider webhooks update it
 * (docs/whatsapp-webhooks.md "Template statuses"); Meta's webhook events `REINSTATED`
 * (stored as `APPROVED`) and `FLAGGED` (no status change) are not statuses.
 *
 * @category models
 */
export const TemplateStatus = Schema.Literal(
  "APPROVED",
  "PENDING",
  "REJECTED",
  "PAUSED",
  "DISABLED",
  "IN_APPEAL",
  "PENDING_DELETION",
  "DELETED",
  "LIMIT_EXCEEDED",
  "ARCHIVED",
  "LOCKED"
)
/** @category models */
export type TemplateStatus = typeof TemplateStatus.Type

/**
 * A `HEADER` component in text format: `text` (1–60 characters) may hold one `{{1}}`;
 * `example.header_text` gives one example per placeholder.
 *
 * @category models
 */
export const TextHeaderComponent = Schema.Struct({
  type: Schema.Literal("HEADER"),
  format: Schema.Literal("TEXT"),
  text: Schema.String,
  example: Schema.optional(Schema.Struct({ header_text: Schema.Array(Schema.String) }))
})

/**
 * A `HEADER` component carrying media, filled at send time with a link (one slot);
 * `example.header_handle` holds one example link.
 *
 * @category models
 */
export const MediaHeaderComponent = Schema.Struct({
  type: Schema.Literal("HEADER"),
  format: Schema.Literal("IMAGE", "VIDEO", "DOCUMENT"),
  example: Schema.optional(Schema.Struct({ header_handle: Schema.Array(Schema.String) }))
})

/**
 * The `BODY` component (required, exactly one): `text` of 1–1024 characters with
 * placeholders `{{1}}` … `{{n}}`; `example.body_text` is `[[one example per placeholder]]`.
 *
 * @category models
 */
export const BodyComponent = Schema.Struct({
  type: Schema.Literal("BODY"),
  text: Schema.String,
  example: Schema.optional(Schema.Struct({ body_text: Schema.Array(Schema.Array(Schema.String)) }))
})

/**
 * A `FOOTER` component: `text` of 1–60 characters, no placeholders.
 *
 * @category models
 */
export const FooterComponent = Schema.Struct({
  type: Schema.Literal("FOOTER"),
  text: Schema.String
})

/**
 * One button of a `BUTTONS` component. `text` is 1–25 characters without placeholders.
 * A `URL` button's `url` (http or https) may end with one `{{1}}`, filled at send time;
 * `example` then holds one example URL. A `PHONE_NUMBER` button's `phone_number` is E.164.
 *
 * @category models
 */
export const TemplateButton = Schema.Union(
  Schema.Struct({ type: Schema.Literal("QUICK_REPLY"), text: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("URL"),
    text: Schema.String,
    url: Schema.String,
    example: Schema.optional(Schema.Array(Schema.String))
  }),
  Schema.Struct({ type: Schema.Literal("PHONE_NUMBER"), text: Schema.String, phone_number: Schema.String })
)
/** @category models */
export type TemplateButton = typeof TemplateButton.Type

/**
 * A `BUTTONS` component: 1–10 buttons.
 *
 * @category models
 */
export const ButtonsComponent = Schema.Struct({
  type: Schema.Literal("BUTTONS"),
  buttons: Schema.Array(TemplateButton)
})

/**
 * One component of a template, in WhatsApp's management shape (docs/templates-and-replies.md
 * "Template rules"). A template has exactly one `BODY` and at most one of each other type.
 *
 * @category models
 */
export const TemplateComponent = Schema.Union(
  TextHeaderComponent,
  MediaHeaderComponent,
  BodyComponent,
  FooterComponent,
  ButtonsComponent
)
/** @category models */
export type TemplateComponent = typeof TemplateComponent.Type

/**
 * Something in a template from Meta that Switchboard's template rules refuse
 * (docs/templates-and-replies.md "Templates from Meta"): `path` names the part by its JSON
 * path within the template (`components[1].format`), `message` says what is wrong. A
 * template with a problem is kept, but never sent.
 *
 * @category models
 */
export const TemplateProblem = Schema.Struct({ path: Schema.String, message: Schema.String })
/** @category models */
export type TemplateProblem = typeof TemplateProblem.Type

/**
 * One stored component of a template: one of {@link TemplateComponent}'s shapes when the
 * template has no `problems`; for a template from Meta with problems, the JSON object Meta
 * gave, as given (it may be of a type Switchboard does not know).
 *
 * @category models
 */
export const StoredTemplateComponent = Schema.Union(
  TemplateComponent,
  Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
    description: "A component of a template with problems: the JSON object Meta gave, as given"
  })
)

/**
 * A message template (docs/templates-and-replies.md "Records"). Its identity within the
 * organization is (`waba_id`, `name`, `language`): `name` (lowercase letters, digits and
 * underscores, 1–255) compared case-insensitively, `language` (a code such as `en_US`)
 * exactly, and `waba_id` the WhatsApp Business Account it came from, `null` for a
 * template written by hand or imported (its own group). `provider_template_id` is Meta's
 * id of the template (`null` when Meta gave none). `components` keep the order they were
 * given in ({@link StoredTemplateComponent}); `problems` lists what Switchboard's rules
 * refuse in a template from Meta (empty when none: always for one written by hand): a
 * template with a problem is never sent. `rejected_reason` is Meta's reason for the last
 * `REJECTED` (or other) status it reported, else `null`.
 *
 * @category models
 */
export const Template = Schema.Struct({
  uuid: TemplateId,
  waba_id: Schema.NullOr(Schema.String),
  provider_template_id: Schema.NullOr(Schema.String),
  name: Schema.String,
  language: Schema.String,
  category: TemplateCategory,
  status: TemplateStatus,
  rejected_reason: Schema.NullOr(Schema.String),
  components: Schema.Array(StoredTemplateComponent),
  problems: Schema.Array(TemplateProblem),
  created_at: Schema.String,
  updated_at: Schema.String
})
/** @category models */
export type Template = typeof Template.Type

/**
 * The content of a template, as the store writes it: the checked, normalised fields of
 * one written by hand (`waba_id` and `provider_template_id` `null`, `problems` empty), or
 * what `readProviderTemplate` read of one from Meta.
 *
 * @category models
 */
export type TemplateContent = Pick<
  Template,
  "waba_id" | "provider_template_id" | "name" | "language" | "category" | "status" | "components" | "problems"
>

/**
 * Whether a template came from Meta (it has Meta's id or its WhatsApp Business Account):
 * Meta owns its content, so `Templates.update` refuses it (docs/templates-and-replies.md
 * "Templates from Meta").
 *
 * @category models
 */
export const isFromProvider = (template: Pick<Template, "waba_id" | "provider_template_id">): boolean =>
  template.waba_id !== null || template.provider_template_id !== null

/**
 * The components of a template without problems, in {@link TemplateComponent}'s shapes.
 * Only a template whose `problems` is empty may be read so: its components passed
 * Switchboard's rules when it was written (a template with problems is refused before
 * any of its components is read: `TemplateUnsupported`).
 *
 * @category models
 */
export const componentsOf = (template: Pick<Template, "components">): ReadonlyArray<TemplateComponent> =>
  template.components as ReadonlyArray<TemplateComponent>

/**
 * Input of `Templates.create` and of an import entry (docs/templates-and-replies.md, docs/import.md): every field required.
 * Values are checked at run time, so they are typed loosely; `category`, `status`,
 * component `type`, header `format` and button `type` are read case-insensitively.
 *
 * @category models
 */
export interface TemplateInput {
  readonly name: string
  readonly language: string
  readonly category: string
  readonly status: string
  readonly components: ReadonlyArray<unknown>
}

/**
 * A link (or an uploaded media id) filling a media header at send time.
 *
 * @category models
 */
export const MediaReference = Schema.Struct({
  link: Schema.optional(Schema.String),
  id: Schema.optional(Schema.String)
})

/**
 * One parameter of a send component, in the WhatsApp Cloud API send format.
 *
 * @category models
 */
export const TemplateSendParameter = Schema.Union(
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("payload"), payload: Schema.String }),
  Schema.Struct({ type: Schema.Literal("image"), image: MediaReference }),
  Schema.Struct({ type: Schema.Literal("video"), video: MediaReference }),
  Schema.Struct({ type: Schema.Literal("document"), document: MediaReference })
)
/** @category models */
export type TemplateSendParameter = typeof TemplateSendParameter.Type

/**
 * One component of the `template` object of a send: `header` or `body` with their
 * parameters, or a `button` (`sub_type` `url` or `quick_reply`, `index` the button's
 * 0-based position as a string).
 *
 * @category models
 */
export const TemplateSendComponent = Schema.Union(
  Schema.Struct({ type: Schema.Literal("header", "body"), parameters: Schema.Array(TemplateSendParameter) }),
  Schema.Struct({
    type: Schema.Literal("button"),
    sub_type: Schema.Literal("url", "quick_reply"),
    index: Schema.String,
    parameters: Schema.Array(TemplateSendParameter)
  })
)
/** @category models */
export type TemplateSendComponent = typeof TemplateSendComponent.Type

/**
 * The `template` object of `POST /send/template` (docs/templates-and-replies.md): `{name, language: {code},
 * components}`.
 *
 * @category models
 */
export const TemplateSendObject = Schema.Struct({
  name: Schema.String,
  language: Schema.Struct({ code: Schema.String }),
  components: Schema.Array(TemplateSendComponent)
})
/** @category models */
export type TemplateSendObject = typeof TemplateSendObject.Type

/**
 * One parameter to fill before sending (docs/templates-and-replies.md): it is
 * `template.components[component].parameters[index]` of the payload; `type` says which
 * value it takes (`text`, or the link of an `image`, `video` or `document`); `example` is
 * the template's example for it, or `null`.
 *
 * @category models
 */
export const TemplateSlot = Schema.Struct({
  component: Schema.Int,
  index: Schema.Int,
  type: Schema.Literal("text", "image", "video", "document"),
  example: Schema.NullOr(Schema.String)
})
/** @category models */
export type TemplateSlot = typeof TemplateSlot.Type

/**
 * Data of `GET /templates/{uuid}/payload`: the send-ready `template` object with every
 * slot empty, and the list of slots to fill.
 *
 * @category models
 */
export const TemplatePayload = Schema.Struct({
  template: TemplateSendObject,
  slots: Schema.Array(TemplateSlot)
})
/** @category models */
export type TemplatePayload = typeof TemplatePayload.Type

/**
 * The `template` object a send names (`POST /send/template`, docs/templates-and-replies.md), before checking:
 * `components` holds the filled parameters (unknown elements are checked at run time).
 *
 * @category models
 */
export interface TemplateSendRequest {
  readonly name: string
  readonly language: { readonly code: string }
  readonly components?: ReadonlyArray<unknown> | undefined
}

/**
 * A template resolved for a send by `Templates.resolveForSend`: the stored template, the
 * normalised `template` object to hand to the transport, and `text`, the rendered message
 * (header text, body and footer with every placeholder replaced, joined by blank lines).
 *
 * @category models
 */
export interface ResolvedTemplate {
  readonly template: Template
  readonly send: TemplateSendObject
  readonly text: string
}
