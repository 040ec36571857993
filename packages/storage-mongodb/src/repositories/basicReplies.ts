import { Option } from "effect"
import { type BasicReply, type BasicReplyCreateOutcome, type BasicReplyId, type BasicReplyRepository, nameKey } from "@switchboard/core"
import type { BasicReplyDocument } from "../internal/documents.js"
import { attempt, onDuplicateKey } from "../internal/driver.js"
import { byKeys, ofOrganization, owned, pageOptions } from "../internal/queries.js"
import type { Collections } from "../internal/schema.js"

/**
 * `Storage.basicReplies` on MongoDB: collection `basic_replies`; triggers are unique per
 * organization through the unique index on `(organization_id, trigger_key)`
 * (`trigger_key` = `nameKey(trigger)`), enforced by the insert itself.
 *
 * @category repositories
 */
export const basicReplyRepository = (collections: Collections): BasicReplyRepository => ({
  create: (organizationId, { uuid, name, trigger, response, now }) =>
    attempt("basicReplies.create", () =>
      onDuplicateKey(
        async (): Promise<BasicReplyCreateOutcome> => {
          const document: BasicReplyDocument = {
            _id: uuid,
            organization_id: organizationId,
            name,
            trigger,
            trigger_key: nameKey(trigger),
            response,
            created_at: now,
            updated_at: now
          }
          await collections.basicReplies.insertOne(document)
          return { _tag: "Created", reply: replyRecord(document) }
        },
        () => ({ _tag: "TriggerTaken" }) as const
      )
    ),
  findById: (organizationId, id) =>
    attempt("basicReplies.findById", async () =>
      Option.map(Option.fromNullable(await collections.basicReplies.findOne(owned(organizationId, id))), replyRecord)
    ),
  findByTrigger: (organizationId, text) =>
    attempt("basicReplies.findByTrigger", async () =>
      Option.map(
        Option.fromNullable(await collections.basicReplies.findOne(byKeys(organizationId, "trigger_key", [nameKey(text)]))),
        replyRecord
      )
    ),
  list: (organizationId, page) =>
    attempt("basicReplies.list", async () => {
      const [documents, total] = await Promise.all([
        collections.basicReplies.find(ofOrganization(organizationId), pageOptions(page)).toArray(),
        collections.basicReplies.countDocuments(ofOrganization(organizationId))
      ])
      return { items: documents.map(replyRecord), total }
    })
})

const replyRecord = (d: BasicReplyDocument): BasicReply => ({
  uuid: d._id as BasicReplyId,
  name: d.name,
  trigger: d.trigger,
  response: d.response,
  created_at: d.created_at,
  updated_at: d.updated_at
})
