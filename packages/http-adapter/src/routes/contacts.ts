import { Effect } from "effect"
import { Contacts, type ContactId, type ContactImportInput, type ContactUpdateInput } from "@switchboard/core"
import { defineRoute } from "./route.js"
import { ContactImportData, ContactLabelsData, ContactListData, ContactRecord, DeletedData, UpdatedContactData } from "./schemas.js"
import { listData, pageQuery, pageRequestOf, uuidOf, uuidParams, withIdAndMessage } from "./shared.js"

const optionalString = { type: "string", optional: true } as const
const nullableString = { type: "string", optional: true, nullable: true } as const

/** `POST /contacts/bulk` (docs/contacts.md "Rules"). */
export const importContactsRoute = defineRoute({
  method: "POST",
  path: "/contacts/bulk",
  idempotent: true,
  tag: "Contacts",
  summary: "Import up to 1000 contacts (upsert by phone)",
  description:
    "Each row: `phone` and `first_name` required; `last_name`, `email`, `street`, `city`, `state`, `zip`, `country` strings; `group` an array of group names (created when missing) or uuids. All-or-nothing: any invalid row → 400 listing every bad row (`field` such as `contacts[3].email`), nothing written.",
  data: ContactImportData,
  errors: ["invalid_input", "group_not_found", "contacts_limit_reached"],
  // Only the array is checked here: Contacts.importBulk reads every row (a row that is not
  // an object, types, required fields, formats) so that one 400 lists every bad row at once
  // (docs/contacts.md "Rules"), and takes only the fields of ContactImportInput (unknown
  // fields are dropped). `optional` lets `null` rows through to be named `contacts[i]`.
  body: { contacts: { type: "array", min: 1, max: 1000, items: { type: "any", optional: true } } },
  handle: ({ auth, body }) =>
    Effect.map(
      Effect.flatMap(Contacts, (contacts) =>
        contacts.importBulk(auth.organization.id, (body as { contacts: ReadonlyArray<ContactImportInput> }).contacts)
      ),
      (result) => ({ message: `${result.created} created, ${result.updated} updated`, data: result })
    )
})

/** `GET /contacts` (docs/http-api.md "Pagination"). */
export const listContactsRoute = defineRoute({
  method: "GET",
  path: "/contacts",
  tag: "Contacts",
  summary: "List contacts, newest first",
  data: ContactListData,
  query: pageQuery,
  handle: ({ auth, query }) => {
    const request = pageRequestOf(query)
    return Effect.map(
      Effect.flatMap(Contacts, (contacts) => contacts.list(auth.organization.id, request)),
      (page) => ({ message: "Contacts retrieved", data: listData("contacts", request, page) })
    )
  }
})

/** `GET /contacts/{uuid}` (extension, docs/http-api.md "Endpoints"). */
export const getContactRoute = defineRoute({
  method: "GET",
  path: "/contacts/:uuid",
  tag: "Contacts",
  summary: "Read a contact (extension)",
  data: ContactRecord,
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Contacts, (contacts) => contacts.get(auth.organization.id, uuidOf<ContactId>(params.uuid))),
      (contact) => ({ message: "Contact retrieved", data: contact })
    )
})

/** `PUT /contacts/{uuid}` (docs/contacts.md): partial update; data `{id, message, ...contact}`. */
export const updateContactRoute = defineRoute({
  method: "PUT",
  path: "/contacts/:uuid",
  tag: "Contacts",
  summary: "Update a contact (partial)",
  data: UpdatedContactData,
  errors: ["invalid_input", "phone_taken"],
  params: uuidParams,
  body: {
    first_name: optionalString,
    last_name: nullableString,
    phone: optionalString,
    email: nullableString,
    // Only null is taken: it clears the opt-out (docs/broadcasts.md "Opt-outs").
    marketing_opt_out_at: { type: "equal", value: null, optional: true }
  },
  handle: ({ auth, params, body }) =>
    Effect.map(
      Effect.flatMap(Contacts, (contacts) =>
        contacts.update(auth.organization.id, uuidOf<ContactId>(params.uuid), body as ContactUpdateInput)
      ),
      (contact) => ({ message: "Contact updated", data: withIdAndMessage("Contact updated", contact) })
    )
})

/** `DELETE /contacts/{uuid}` (extension): data `{uuid, deleted: true}`. */
export const deleteContactRoute = defineRoute({
  method: "DELETE",
  path: "/contacts/:uuid",
  tag: "Contacts",
  summary: "Delete a contact (extension)",
  data: DeletedData,
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.as(
      Effect.flatMap(Contacts, (contacts) => contacts.delete(auth.organization.id, uuidOf<ContactId>(params.uuid))),
      { message: "Contact deleted", data: { uuid: uuidOf(params.uuid), deleted: true } }
    )
})

/** `GET /contacts/{uuid}/labels` (docs/contacts.md): data `{labels}`. */
export const contactLabelsRoute = defineRoute({
  method: "GET",
  path: "/contacts/:uuid/labels",
  tag: "Labels",
  summary: "List the labels of a contact",
  data: ContactLabelsData,
  params: uuidParams,
  handle: ({ auth, params }) =>
    Effect.map(
      Effect.flatMap(Contacts, (contacts) => contacts.labelsOf(auth.organization.id, uuidOf<ContactId>(params.uuid))),
      (labels) => ({ message: "Labels retrieved", data: { labels } })
    )
})
