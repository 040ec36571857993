import { Effect, Layer } from "effect"
import { basicReplyRepository } from "./basicReplies.js"
import { broadcastRepository } from "./broadcasts.js"
import { channelRepository } from "./channels.js"
import { chatRepository } from "./chats.js"
import { contactRepository } from "./contacts.js"
import { groupRepository, labelRepository } from "./groupsAndLabels.js"
import { idempotencyRepository } from "./idempotency.js"
import { organizationRepository } from "./organizations.js"
import { outboxRepository } from "./outbox.js"
import { mediaRepository } from "./media.js"
import { makeState } from "./state.js"
import { templateRepository } from "./templates.js"
import { templateSyncRepository } from "./templateSyncs.js"
import { webhookRejectRepository } from "./webhookRejects.js"
import { webhookRepository } from "./webhooks.js"
import { Storage, type StorageService } from "../storage/Storage.js"

/**
 * Builds an in-memory {@link StorageService}: plain maps inside this process, lost when it
 * ends. Every method runs synchronously, so each is atomic. For tests, demos and
 * single-process deployments that need no persistence.
 *
 * @category constructors
 */
export const make = (): StorageService => {
  const state = makeState()
  return {
    organizations: organizationRepository(state),
    contacts: contactRepository(state),
    groups: groupRepository(state),
    labels: labelRepository(state),
    chats: chatRepository(state),
    templates: templateRepository(state),
    basicReplies: basicReplyRepository(),
    idempotency: idempotencyRepository(),
    channels: channelRepository(state),
    webhooks: webhookRepository(state),
    webhookRejects: webhookRejectRepository(),
    outbox: outboxRepository(state),
    broadcasts: broadcastRepository(state),
    media: mediaRepository(state),
    templateSyncs: templateSyncRepository(state),
    // Nothing to reach and no schema: always current.
    health: () => Effect.succeed({ migrations_current: true })
  }
}

/**
 * A Layer providing a fresh in-memory {@link Storage} each time it is built.
 *
 * @category layers
 * @example
 * import { Effect } from "effect"
 * import { Core, MemoryStorage, Organizations } from "@switchboard/core"
 *
 * const program = Organizations.pipe(Effect.flatMap((orgs) => orgs.create({ name: "Acme" })))
 * Effect.runPromise(program.pipe(Effect.provide(Core.layer), Effect.provide(MemoryStorage.layer)))
 */
export const layer: Layer.Layer<Storage> = Layer.sync(Storage, make)
