import { Effect } from "effect"
import { BasicReplies, type BasicReplyId, type BasicReplyInput } from "@switchboard/core"
import { defineRoute } from "./route.js"
import { BasicReplyListData, BasicReplyRecord, withIdAndMessageData } from "./schemas.js"
import { listData, pageQuery, pageRequestOf, uuidOf, uuidParams, withIdAndMessage } from "./shared.js"

/** `GET /basic-replies` (docs/http-api.md "Pagination"): data `{basic_replies, pagination}`. */
export const listBasicRepliesRoute = defineRoute({
  method: "GET",
  path: "/basic-replies",
  tag: "Basic replies",
  summary: "List basic replies, newest first",
  data: BasicReplyListData,
  query: pageQuery,
  handle: ({ auth, query }) => {
    const request = pageRequestOf(query)
    return Effect.map(
      Effect.flatMap(BasicReplies, (replies) => replies.list(auth.organization.id, request)),
      (page) => ({ message: "Basic replies retrieved", data: listData("basic_replies", request, page) })
    )
  }
})

/**
 * `POST /basic-replies` (docs/templates-and-replies.md): body `{name, trigger, response}`, all required strings
 * (lengths and blanks are checked by core); data `{id, message, ...reply}`.
 */
export const createBasicReplyRoute = defineRoute({
  method: "POST",
  path: "/basic-replies",
  tag: "Basic replies",
  summary: "Create a basic reply",
  data: withIdAndMessageData(BasicReplyRecord),
  errors: ["invalid_input", "trigger_taken"],
  body: { name: { type: "string" }, trigger: { type: "string" }, response: { type: "string" } },
  handle: ({ auth, body }) =>
    Effect.map(
      Effect.flatMap(BasicReplies, (replies) => replies.create(auth.organization.id, body as BasicReplyInput)),
      (reply) => ({ message: "Basic reply created", data: withIdAndMessage("Basic reply created", reply) })
    )
})

/** `GET /basic-replies/{uuid}` (extension, docs/http-api.md "Endpoints"): data is the reply. */
export const getBasicReplyRoute = defineRoute({
  method: "GET",
  path: "/basic-replies/:uuid",
  tag: "Basic replies",
  summary: "Read a basic reply (extension)",
  data: BasicReplyRecord,
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(BasicReplies, (replies) => replies.get(auth.organization.id, uuidOf<BasicReplyId>(params.uuid))),
      (reply) => ({ message: "Basic reply retrieved", data: reply })
    )
})
