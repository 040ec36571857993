import { Effect, Layer } from "effect"
import { basicReplyRepository } from "./memory/basicReplies.js"
import { broadcastRepository } from "./memory/broadcasts.js"
import { channelRepository } from "./memory/channels.js"
import { chatRepository } from "./memory/chats.js"
import { contactRepository } from "./memory/contacts.js"
import { groupRepository, labelRepository } from "./memory/groupsAndLabels.js"
import { idempotencyRepository } from "./memory/idempotency.js"
import { organizationRepository } from "./memory/organizations.js"
import { outboxRepository } from "./memory/outbox.js"
import { makeState } from "./memory/state.js"
import { templateRepository } from "./memory/templates.js"
import { webhookRejectRepository } from "./memory/webhookRejects.js"
import { webhookRepository } from "./memory/webhooks.js"
import { Storage, type StorageService } from "./Storage.js"

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
