import { Effect } from "effect"
import { Templates, type TemplateId } from "@switchboard/core"
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
 * example}]}`, every slot empty.
 */
export const templatePayloadRoute = defineRoute({
  method: "GET",
  path: "/templates/:uuid/payload",
  tag: "Templates",
  summary: "Build the send-ready template object, with the slots to fill",
  data: TemplatePayloadData,
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Templates, (templates) => templates.payload(auth.organization.id, uuidOf<TemplateId>(params.uuid))),
      (payload) => ({ message: "Template payload built", data: payload })
    )
})
