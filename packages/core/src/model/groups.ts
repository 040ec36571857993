import { Schema } from "effect"

/**
 * Identifier of a contact group (audience).
 *
 * @category models
 */
export const GroupId = Schema.UUID.pipe(Schema.brand("GroupId"))
/** @category models */
export type GroupId = typeof GroupId.Type

/**
 * A contact group (audience), docs/contacts.md "Records": `contacts_count` is the number of
 * contacts in it now. Names are unique per organization, case-insensitively.
 *
 * @category models
 */
export const Group = Schema.Struct({
  uuid: GroupId,
  name: Schema.String,
  contacts_count: Schema.Int,
  created_at: Schema.String,
  updated_at: Schema.String
})
/** @category models */
export type Group = typeof Group.Type

/**
 * A group as embedded in a contact record.
 *
 * @category models
 */
export interface GroupSummary {
  readonly uuid: GroupId
  readonly name: string
}
