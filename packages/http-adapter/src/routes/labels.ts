import { Effect } from "effect"
import { Labels, type ContactId, type LabelId } from "@switchboard/core"
import { defineRoute } from "./route.js"
import { DeletedData, LabelAssignData, LabelBulkDeleteData, LabelListData, LabelRecord } from "./schemas.js"
import { listData, pageQuery, pageRequestOf, uuidOf, uuidOrUuids, uuidParams, uuidsOf } from "./shared.js"

/** `POST /labels` (docs/contacts.md): data is the label. */
export const createLabelRoute = defineRoute({
  method: "POST",
  path: "/labels",
  tag: "Labels",
  summary: "Create a label",
  data: LabelRecord,
  errors: ["invalid_input", "label_name_taken", "label_limit_reached"],
  body: { name: { type: "string" }, color: { type: "string", optional: true } },
  handle: ({ auth, body }) =>
    Effect.map(
      Effect.flatMap(Labels, (labels) => labels.create(auth.organization.id, body as { name: string; color?: string })),
      (label) => ({ message: "Label created", data: label })
    )
})

/** `GET /labels` (extension, paginated). */
export const listLabelsRoute = defineRoute({
  method: "GET",
  path: "/labels",
  tag: "Labels",
  summary: "List labels (extension)",
  data: LabelListData,
  query: pageQuery,
  handle: ({ auth, query }) => {
    const request = pageRequestOf(query)
    return Effect.map(
      Effect.flatMap(Labels, (labels) => labels.list(auth.organization.id, request)),
      (page) => ({ message: "Labels retrieved", data: listData("labels", request, page) })
    )
  }
})

/** `GET /labels/{uuid}` (docs/contacts.md). */
export const getLabelRoute = defineRoute({
  method: "GET",
  path: "/labels/:uuid",
  tag: "Labels",
  summary: "Read a label",
  data: LabelRecord,
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Labels, (labels) => labels.get(auth.organization.id, uuidOf<LabelId>(params.uuid))),
      (label) => ({ message: "Label retrieved", data: label })
    )
})

/** `DELETE /labels/{uuid}` (docs/contacts.md): data `{uuid, deleted: true}`. */
export const deleteLabelRoute = defineRoute({
  method: "DELETE",
  path: "/labels/:uuid",
  tag: "Labels",
  summary: "Delete a label and its assignments",
  data: DeletedData,
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.as(
      Effect.flatMap(Labels, (labels) => labels.delete(auth.organization.id, uuidOf<LabelId>(params.uuid))),
      { message: "Label deleted", data: { uuid: uuidOf(params.uuid), deleted: true } }
    )
})

/** `POST /labels/bulk-delete` (docs/contacts.md): data `{deleted, tag_uuids, not_found}`. */
export const bulkDeleteLabelsRoute = defineRoute({
  method: "POST",
  path: "/labels/bulk-delete",
  tag: "Labels",
  summary: "Delete several labels (idempotent)",
  data: LabelBulkDeleteData,
  body: { tag_uuids: uuidOrUuids },
  handle: ({ auth, body }) =>
    Effect.map(
      Effect.flatMap(Labels, (labels) =>
        labels.deleteMany(auth.organization.id, uuidsOf<LabelId>((body as { tag_uuids: unknown }).tag_uuids))
      ),
      (result) => ({ message: `${result.deleted} labels deleted`, data: result })
    )
})

/** `POST /contacts/labels/assign` (docs/contacts.md): data `{tag_uuid, assigned, contact_uuids}`. */
export const assignLabelRoute = defineRoute({
  method: "POST",
  path: "/contacts/labels/assign",
  tag: "Labels",
  summary: "Assign a label to contacts (idempotent)",
  data: LabelAssignData,
  errors: ["not_found"],
  body: { contact_uuids: uuidOrUuids, tag_uuid: { type: "uuid" } },
  handle: ({ auth, body }) => {
    const { contact_uuids, tag_uuid } = body as { contact_uuids: unknown; tag_uuid: unknown }
    return Effect.map(
      Effect.flatMap(Labels, (labels) =>
        labels.assign(auth.organization.id, uuidOf<LabelId>(tag_uuid), uuidsOf<ContactId>(contact_uuids))
      ),
      (result) => ({ message: "Label assigned", data: result })
    )
  }
})
