import { Context, type Effect } from "effect"
import type { BasicReplyRepository } from "./BasicReplyRepository.js"
import type { BroadcastRepository } from "./BroadcastRepository.js"
import type { ChannelRepository } from "./ChannelRepository.js"
import type { ChatRepository } from "./ChatRepository.js"
import type { ContactRepository } from "./ContactRepository.js"
import type { StorageError } from "./errors.js"
import type { GroupRepository } from "./GroupRepository.js"
import type { IdempotencyRepository } from "./IdempotencyRepository.js"
import type { LabelRepository } from "./LabelRepository.js"
import type { MediaRepository } from "./MediaRepository.js"
import type { OrganizationRepository } from "./OrganizationRepository.js"
import type { OutboxRepository } from "./OutboxRepository.js"
import type { TemplateRepository } from "./TemplateRepository.js"
import type { TemplateSyncRepository } from "./TemplateSyncRepository.js"
import type { WebhookRejectRepository } from "./WebhookRejectRepository.js"
import type { WebhookRepository } from "./WebhookRepository.js"

/**
 * What {@link StorageService.health} reports once the store answered
 * (docs/deployment.md "Health checks"): `migrations_current` is `true` when the store's
 * schema is the version this adapter expects (none pending, none newer); otherwise
 * `detail` says why in one line (versions, never a secret or a connection string).
 *
 * @category storage
 */
export interface StorageHealth {
  readonly migrations_current: boolean
  readonly detail?: string
}

/**
 * The storage interface: one repository per domain. Adapters (memory in
 * `@switchboard/core`, SQLite, MongoDB) provide it; `@switchboard/storage-contract` is
 * the suite every adapter must pass.
 *
 * @category storage
 */
export interface StorageService {
  readonly organizations: OrganizationRepository
  readonly contacts: ContactRepository
  readonly groups: GroupRepository
  readonly labels: LabelRepository
  readonly chats: ChatRepository
  readonly templates: TemplateRepository
  readonly basicReplies: BasicReplyRepository
  readonly idempotency: IdempotencyRepository
  readonly channels: ChannelRepository
  readonly webhooks: WebhookRepository
  readonly webhookRejects: WebhookRejectRepository
  readonly outbox: OutboxRepository
  readonly broadcasts: BroadcastRepository
  readonly media: MediaRepository
  readonly templateSyncs: TemplateSyncRepository
  /**
   * A cheap read proving the store answers (SQLite: a read that WAL mode never blocks;
   * PostgreSQL and MongoDB: one round trip) and whether its schema is current. Fails with
   * {@link StorageError} when the store does not answer; the caller bounds the wait
   * (readiness gives it 1 s, docs/deployment.md "Health checks").
   */
  readonly health: () => Effect.Effect<StorageHealth, StorageError>
}

/**
 * Tag of the {@link StorageService}.
 *
 * @category storage
 */
export class Storage extends Context.Tag("@switchboard/core/Storage")<Storage, StorageService>() {}
