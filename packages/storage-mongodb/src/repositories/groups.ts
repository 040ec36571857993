import { Option } from "effect"
import { type GroupId, type GroupRepository, type GroupWriteOutcome, nameKey } from "@switchboard/core"
import { attempt, onDuplicateKey } from "../internal/driver.js"
import { byKeys, ofOrganization, owned, ownedAmong, pageOptions } from "../internal/queries.js"
import { groupRecords } from "../internal/records.js"
import type { Collections } from "../internal/schema.js"

/**
 * `Storage.groups` on MongoDB: collection `groups`, names unique per organization through
 * the unique index on `(organization_id, name_key)` (`name_key` = core's `nameKey`:
 * trimmed, lowercased), so two concurrent creates of one name store it once.
 * `contacts_count` counts the contacts whose `group_ids` hold the group.
 *
 * @category repositories
 */
export const groupRepository = (collections: Collections): GroupRepository => {
  const record = async (organizationId: string, id: string) => {
    const document = await collections.groups.findOne(owned(organizationId, id))
    return document === null ? undefined : (await groupRecords(collections, organizationId, [document]))[0]
  }
  return {
    create: (organizationId, { uuid, name, now }) =>
      attempt("groups.create", () =>
        onDuplicateKey(
          async (): Promise<GroupWriteOutcome> => {
            const document = { _id: uuid, organization_id: organizationId, name, name_key: nameKey(name), created_at: now, updated_at: now }
            await collections.groups.insertOne(document)
            return { _tag: "Written", group: { uuid, name, contacts_count: 0, created_at: now, updated_at: now } }
          },
          () => ({ _tag: "NameTaken" }) as const
        )
      ),
    rename: (organizationId, id, name, now) =>
      attempt("groups.rename", () =>
        onDuplicateKey(
          async (): Promise<GroupWriteOutcome> => {
            const update = { $set: { name, name_key: nameKey(name), updated_at: now } }
            const result = await collections.groups.updateOne(owned(organizationId, id), update)
            if (result.matchedCount === 0) return { _tag: "NotFound" }
            const group = await record(organizationId, id)
            return group === undefined ? { _tag: "NotFound" } : { _tag: "Written", group }
          },
          () => ({ _tag: "NameTaken" }) as const
        )
      ),
    findById: (organizationId, id) =>
      attempt("groups.findById", async () => Option.fromNullable(await record(organizationId, id))),
    findByNames: (organizationId, names) =>
      attempt("groups.findByNames", async () => {
        if (names.length === 0) return []
        const documents = await collections.groups.find(byKeys(organizationId, "name_key", names.map(nameKey))).toArray()
        return groupRecords(collections, organizationId, documents)
      }),
    list: (organizationId, page) =>
      attempt("groups.list", async () => {
        const [documents, total] = await Promise.all([
          collections.groups.find(ofOrganization(organizationId), pageOptions(page)).toArray(),
          collections.groups.countDocuments(ofOrganization(organizationId))
        ])
        return { items: await groupRecords(collections, organizationId, documents), total }
      })
  }
}

/** The group ids among `ids` that are not the organization's groups, in first-seen order. */
export const missingGroups = async (collections: Collections, organizationId: string, ids: ReadonlyArray<GroupId>) => {
  const wanted = [...new Set(ids)]
  if (wanted.length === 0) return []
  const found = await collections.groups
    .find(ownedAmong(organizationId, wanted), { projection: { _id: 1 } })
    .toArray()
  const present = new Set(found.map((d) => d._id))
  return wanted.filter((id) => !present.has(id))
}
