import type { WebhookRejectRepository } from "@switchboard/core"
import { notBuilt } from "../internal/notBuilt.js"
import type { RepositoryFactory } from "../internal/sql.js"

export const webhookRejectRepository: RepositoryFactory<WebhookRejectRepository> = () => notBuilt<WebhookRejectRepository>("webhookRejects")
