import { Context, Effect, Layer, Option } from "effect"
import { InvalidInput, RecordNotFound, UniqueValueTaken } from "../model/commonErrors.js"
import { nowIso } from "../internal/time.js"
import { IssueCollector } from "../internal/validation.js"
import type { OrganizationId } from "../model/organizations.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { Page, PageRequest } from "../model/common.js"
import type { StorageError } from "../storage/errors.js"
import { Storage } from "../storage/Storage.js"
import type { BasicReply, BasicReplyId, BasicReplyInput } from "../model/basicReplies.js"
import { readBasicReply } from "./readBasicReply.js"

/**
 * Basic (canned) replies of an organization (`/basic-replies`, docs/templates-and-replies.md "Basic replies",
 * docs/templates-and-replies.md).
 *
 * @category services
 */
export interface BasicRepliesService {
  /**
   * Creates a reply. `name` and `trigger` are trimmed, 1–255 characters; `response`
   * trimmed, 1–4096 (`InvalidInput` naming each bad field). A trigger equal to another
   * reply's, case-insensitively after trimming → `UniqueValueTaken` (`trigger_taken`).
   */
  readonly create: (
    organizationId: OrganizationId,
    input: BasicReplyInput
  ) => Effect.Effect<BasicReply, InvalidInput | UniqueValueTaken | StorageError>
  /** One reply. */
  readonly get: (organizationId: OrganizationId, id: BasicReplyId) => Effect.Effect<BasicReply, RecordNotFound | StorageError>
  /** One page of replies, newest first. */
  readonly list: (organizationId: OrganizationId, page: PageRequest) => Effect.Effect<Page<BasicReply>, StorageError>
  /**
   * The reply an inbound message triggers (issue 4 "Auto-reply"): the one whose trigger
   * equals the message's trimmed text, ignoring case; `None` when there is none (a blank
   * text never matches).
   */
  readonly matchInbound: (
    organizationId: OrganizationId,
    text: string
  ) => Effect.Effect<Option.Option<BasicReply>, StorageError>
}

/**
 * Tag of the {@link BasicRepliesService}; `BasicReplies.layer` needs `Storage` and
 * `SecureRandom`.
 *
 * @category services
 * @example
 * import { Effect } from "effect"
 * import { BasicReplies, type OrganizationId } from "@switchboard/core"
 *
 * const create = (organizationId: OrganizationId) =>
 *   Effect.flatMap(BasicReplies, (replies) =>
 *     replies.create(organizationId, { name: "Hours", trigger: "hours", response: "We are open 9–17." })
 *   )
 */
export class BasicReplies extends Context.Tag("@switchboard/core/BasicReplies")<BasicReplies, BasicRepliesService>() {
  static readonly layer: Layer.Layer<BasicReplies, never, Storage | SecureRandom> = Layer.effect(
    BasicReplies,
    Effect.suspend(() => make)
  )
}

const notFound = (id: string) => new RecordNotFound({ missing: [{ resource: "basic_reply", uuid: id }] })

const make = Effect.gen(function* () {
  const storage = yield* Storage
  const random = yield* SecureRandom

  const create = Effect.fn("BasicReplies.create")(function* (organizationId: OrganizationId, input: BasicReplyInput) {
    const collector = new IssueCollector()
    const reply = readBasicReply(collector, "", input)
    if (collector.issues.length > 0) return yield* new InvalidInput({ issues: collector.issues })
    const uuid = (yield* random.uuid()) as BasicReplyId
    const outcome = yield* storage.basicReplies.create(organizationId, { uuid, ...reply, now: yield* nowIso })
    if (outcome._tag === "TriggerTaken") {
      return yield* new UniqueValueTaken({ code: "trigger_taken", field: "trigger", value: reply.trigger })
    }
    return outcome.reply
  })

  const service: BasicRepliesService = {
    create,
    get: (organizationId, id) =>
      Effect.flatMap(storage.basicReplies.findById(organizationId, id), (reply) =>
        Option.match(reply, { onNone: () => Effect.fail(notFound(id)), onSome: Effect.succeed })
      ),
    list: (organizationId, page) => storage.basicReplies.list(organizationId, page),
    matchInbound: (organizationId, text) =>
      typeof text !== "string" || text.trim() === ""
        ? Effect.succeedNone
        : storage.basicReplies.findByTrigger(organizationId, text)
  }
  return service
})
