import { Effect } from "effect"
import { ContactGroups, type GroupId } from "@switchboard/core"
import { defineRoute } from "./route.js"
import { GroupListData, GroupRecord, withIdAndMessageData } from "./schemas.js"
import { listData, pageQuery, pageRequestOf, uuidOf, uuidParams, withIdAndMessage } from "./shared.js"

const nameBody = { name: { type: "string" } } as const

/** `POST /contact-groups` (docs/contacts.md): data `{id, message, ...group}`. */
export const createGroupRoute = defineRoute({
  method: "POST",
  path: "/contact-groups",
  tag: "Groups",
  summary: "Create a contact group",
  data: withIdAndMessageData(GroupRecord),
  errors: ["invalid_input", "group_name_taken"],
  body: nameBody,
  handle: ({ auth, body }) =>
    Effect.map(
      Effect.flatMap(ContactGroups, (groups) => groups.create(auth.organization.id, (body as { name: string }).name)),
      (group) => ({ message: "Group created", data: withIdAndMessage("Group created", group) })
    )
})

/** `PUT /contact-groups/{uuid}` (docs/contacts.md): data `{id, message, ...group}`. */
export const renameGroupRoute = defineRoute({
  method: "PUT",
  path: "/contact-groups/:uuid",
  tag: "Groups",
  summary: "Rename a contact group",
  data: withIdAndMessageData(GroupRecord),
  errors: ["invalid_input", "group_name_taken"],
  params: uuidParams,
  body: nameBody,
  handle: ({ auth, params, body }) =>
    Effect.map(
      Effect.flatMap(ContactGroups, (groups) =>
        groups.rename(auth.organization.id, uuidOf<GroupId>(params.uuid), (body as { name: string }).name)
      ),
      (group) => ({ message: "Group updated", data: withIdAndMessage("Group updated", group) })
    )
})

/** `GET /contact-groups` (extension, paginated like the other lists). */
export const listGroupsRoute = defineRoute({
  method: "GET",
  path: "/contact-groups",
  tag: "Groups",
  summary: "List contact groups (extension)",
  data: GroupListData,
  query: pageQuery,
  handle: ({ auth, query }) => {
    const request = pageRequestOf(query)
    return Effect.map(
      Effect.flatMap(ContactGroups, (groups) => groups.list(auth.organization.id, request)),
      (page) => ({ message: "Groups retrieved", data: listData("groups", request, page) })
    )
  }
})
