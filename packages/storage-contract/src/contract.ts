import { describe } from "@effect/vitest"
import { basicRepliesContract } from "./basic-replies.js"
import { broadcastsContract } from "./broadcasts.js"
import { channelsContract } from "./channels.js"
import { chatsContract } from "./chats.js"
import { chatsImportContract } from "./chats-import.js"
import { chatsListContract } from "./chats-list.js"
import { contactsContract } from "./contacts.js"
import { contactsImportContract } from "./contacts-import.js"
import { groupsContract } from "./groups.js"
import { idempotencyContract } from "./idempotency.js"
import { labelsContract } from "./labels.js"
import { mediaContract } from "./media.js"
import { messagesContract } from "./messages.js"
import { operationsContract } from "./operations.js"
import type { StorageContractOptions } from "./options.js"
import { organizationsContract } from "./organizations.js"
import { outboxContract } from "./outbox.js"
import { providerStatusesContract } from "./provider-statuses.js"
import { repliesAndReactionsContract } from "./replies-and-reactions.js"
import { templatesContract } from "./templates.js"
import { templateSyncsContract } from "./template-syncs.js"
import { webhookRejectsContract } from "./webhook-rejects.js"
import { webhooksContract } from "./webhooks.js"
import { customerServiceWindowContract } from "./window.js"

/**
 * Registers the whole storage contract suite with vitest: one `describe` per repository
 * (topic modules: `organizations.ts`, `contacts-import.ts`, `contacts.ts`, `groups.ts`,
 * `labels.ts`, `chats.ts`, `messages.ts`, `replies-and-reactions.ts`, `provider-statuses.ts`, `window.ts`, `chats-list.ts`, `chats-import.ts`,
 * `templates.ts`, `template-syncs.ts`, `basic-replies.ts`, `idempotency.ts`, `channels.ts`, `webhooks.ts`,
 * `webhook-rejects.ts`, `outbox.ts`, `broadcasts.ts`, `media.ts`, and `operations.ts` for `health()` and
 * `outbox.summary()`), each test on a fresh store from
 * `options.makeLayer()` (or, for the send queue's shared-store cases, from
 * `options.makeSharedLayers()` when given).
 *
 * @category contract
 * @example
 * import { runStorageContract } from "@switchboard/storage-contract"
 * import { MemoryStorage } from "@switchboard/core"
 *
 * runStorageContract({ name: "memory", makeLayer: () => MemoryStorage.layer })
 */
export const runStorageContract = (options: StorageContractOptions): void => {
  describe(`storage contract: ${options.name}`, () => {
    organizationsContract(options)
    contactsImportContract(options)
    contactsContract(options)
    groupsContract(options)
    labelsContract(options)
    chatsContract(options)
    messagesContract(options)
    repliesAndReactionsContract(options)
    providerStatusesContract(options)
    customerServiceWindowContract(options)
    chatsListContract(options)
    chatsImportContract(options)
    templatesContract(options)
    templateSyncsContract(options)
    basicRepliesContract(options)
    idempotencyContract(options)
    channelsContract(options)
    webhooksContract(options)
    webhookRejectsContract(options)
    outboxContract(options)
    broadcastsContract(options)
    mediaContract(options)
    operationsContract(options)
  })
}
