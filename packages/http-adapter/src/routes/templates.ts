import { Effect } from "effect"
import { type MetaTemplateCallFailed, Templates, type TemplateId, TemplateSubmissions } from "@switchboard/core"
import { HttpFailure } from "../HttpFailure.js"
import { defineRoute } from "./route.js"
import { TemplateListData, TemplatePayloadData, TemplateRecord } from "./schemas.js"
import { listData, pageQuery, pageRequestOf, uuidOf, uuidParams } from "./shared.js"

/** `GET /templates` (docs/http-api.md "Pagination"): data `{templates, pagination}`. */
export const listTemplatesRoute = defineRoute({
  method: "GET",
  path: "/templates",
  tag: "Templates",
  summary: "List message templates, newest first",
  data: TemplateListData,
  query: pageQuery,
  handle: ({ auth, query }) => {
    const request = pageRequestOf(query)
    return Effect.map(
      Effect.flatMap(Templates, (templates) => templates.list(auth.organization.id, request)),
      (page) => ({ message: "Templates retrieved", data: listData("templates", request, page) })
    )
  }
})

/** `GET /templates/{uuid}` (extension, docs/http-api.md "Endpoints"): data is the template. */
export const getTemplateRoute = defineRoute({
  method: "GET",
  path: "/templates/:uuid",
  tag: "Templates",
  summary: "Read a message template (extension)",
  data: TemplateRecord,
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Templates, (templates) => templates.get(auth.organization.id, uuidOf<TemplateId>(params.uuid))),
      (template) => ({ message: "Template retrieved", data: template })
    )
})

/**
 * `GET /templates/{uuid}/payload` (docs/templates-and-replies.md):
 * data `{template: {name, language: {code}, components}, slots: [{component, index, type,
 * example}]}`, every slot empty. A template with `problems` → 400 `template_unsupported`.
 */
export const templatePayloadRoute = defineRoute({
  method: "GET",
  path: "/templates/:uuid/payload",
  tag: "Templates",
  summary: "Build the send-ready template object, with the slots to fill",
  description:
    "A template from Meta that Switchboard cannot send (it has `problems`: a component type Switchboard does not know, " +
    "a location header…) answers 400 `template_unsupported` naming its first problem.",
  data: TemplatePayloadData,
  errors: ["template_unsupported"],
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Templates, (templates) => templates.payload(auth.organization.id, uuidOf<TemplateId>(params.uuid))),
      (payload) => ({ message: "Template payload built", data: payload })
    )
})

/**
 * The answer to a refused call to Meta's template API (docs/templates-and-replies.md
 * "Submitting and deleting"): Meta's HTTP 4xx with its code 100 (an invalid parameter: the
 * template itself) is the client's to fix, 400 `template_refused_by_meta`; anything else
 * (a refused token, a limit, Meta down or unreachable) is 502 `provider_error`. Both carry
 * Meta's reason, never a token.
 */
export const metaTemplateFailure = (failure: MetaTemplateCallFailed): HttpFailure => {
  const refused = failure.http_status !== null && failure.http_status >= 400 && failure.http_status <= 499 && failure.provider_code === "100"
  const detail = [
    failure.provider_code === null ? null : `code ${failure.provider_code}`,
    failure.provider_subcode === null ? null : `subcode ${failure.provider_subcode}`
  ].filter((part) => part !== null).join(", ")
  const reason = `${failure.reason}${detail === "" ? "" : ` (${detail})`}`
  return refused
    ? new HttpFailure({ status: 400, code: "template_refused_by_meta", message: `Meta refused the template: ${reason}` })
    : new HttpFailure({ status: 502, code: "provider_error", message: `Meta's Graph API failed the call: ${reason}` })
}

/**
 * `POST /templates` `{channel_uuid, name, language, category, components}`: submits a
 * template to Meta through the channel's WhatsApp Business Account; data is the stored
 * template (`PENDING` with Meta's id, usually). Honours Idempotency-Key: the template gets
 * the uuid the key's record holds.
 */
export const submitTemplateRoute = defineRoute({
  method: "POST",
  path: "/templates",
  tag: "Templates",
  summary: "Submit a template to Meta for review",
  description:
    "The channel `channel_uuid` (404 when the organization has none with it, before the template is checked) gives the " +
    "WhatsApp Business Account and the access token. The template follows Switchboard's template rules, with category " +
    "`MARKETING` or `UTILITY`, no media header, and one example per placeholder (400 naming each field). It is stored " +
    "`PENDING`, then submitted to Meta (`POST /{waba_id}/message_templates`): Meta's id becomes `provider_template_id`, " +
    "Meta's category and status are stored, and Meta's status webhook moves it later. When Meta already has this name " +
    "and language, Meta's template is adopted. When Meta refuses, nothing is kept: 400 `template_refused_by_meta` with " +
    "Meta's reason when the template is at fault, 502 `provider_error` otherwise.",
  data: TemplateRecord,
  errors: ["invalid_input", "not_found", "template_name_taken", "template_refused_by_meta", "provider_error", "secret_key_not_configured"],
  idempotent: true,
  body: {
    channel_uuid: { type: "string" },
    name: { type: "string" },
    language: { type: "string" },
    category: { type: "string" },
    components: { type: "array" }
  },
  handle: ({ auth, body, idempotency }) =>
    Effect.flatMap(TemplateSubmissions, (submissions) =>
      submissions.submit(auth.organization.id, body, idempotency === undefined ? {} : { templateUuid: idempotency.resourceUuid as TemplateId })
    ).pipe(
      Effect.catchTag("MetaTemplateCallFailed", (failure) => Effect.fail(metaTemplateFailure(failure))),
      Effect.map((template) => ({ message: "Template submitted to Meta", data: template }))
    )
})

/**
 * `DELETE /templates/{uuid}`: deletes the template at Meta (that language only) through an
 * active channel of its WhatsApp Business Account, then marks it `DELETED`; one Meta never
 * had is only marked. Data is the template.
 */
export const deleteTemplateRoute = defineRoute({
  method: "DELETE",
  path: "/templates/:uuid",
  tag: "Templates",
  summary: "Delete a template, at Meta too",
  description:
    "A template from Meta is deleted there first (`DELETE /{waba_id}/message_templates` with its name and id: that " +
    "language only) with the token of an active channel of the organization on its WhatsApp Business Account (none: 409 " +
    "`no_channel_for_account`); a refusal of Meta's changes nothing. A template written by hand or imported is only " +
    "marked here. The template is kept, `DELETED` (sent messages refer to it), and its sending broadcasts stop. An " +
    "already deleted template is answered as it is. Meta blocks a deleted name for 30 days.",
  data: TemplateRecord,
  errors: ["no_channel_for_account", "template_refused_by_meta", "provider_error", "secret_key_not_configured"],
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.flatMap(TemplateSubmissions, (submissions) => submissions.remove(auth.organization.id, uuidOf<TemplateId>(params.uuid))).pipe(
      Effect.catchTag("MetaTemplateCallFailed", (failure) => Effect.fail(metaTemplateFailure(failure))),
      Effect.map((template) => ({ message: "Template deleted", data: template }))
    )
})
