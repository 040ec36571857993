import { Effect } from "effect"
import { Chats, type MessageId } from "@switchboard/core"
import { defineRoute } from "./route.js"
import { MessageRecord } from "./schemas.js"
import { uuidOf, uuidParams } from "./shared.js"

/**
 * `GET /messages/{uuid}` (extension, docs/chats.md "Inbox routes"): one message of the
 * organization, inbound or outbound, exactly as `GET /chats/{uuid}/messages` shows it
 * (`Chats.getMessage`). An unknown uuid or another organization's message → 404
 * `not_found`; a malformed uuid → 400 naming `uuid`.
 */
export const getMessageRoute = defineRoute({
  method: "GET",
  path: "/messages/:uuid",
  tag: "Chats",
  summary: "Read a message, inbound or outbound (extension)",
  data: MessageRecord,
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Chats, (chats) => chats.getMessage(auth.organization.id, uuidOf<MessageId>(params.uuid))),
      (message) => ({ message: "Message retrieved", data: message })
    )
})
