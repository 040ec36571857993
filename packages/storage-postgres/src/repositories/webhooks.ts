import type { WebhookRepository } from "@switchboard/core"
import { notBuilt } from "../internal/notBuilt.js"
import type { RepositoryFactory } from "../internal/sql.js"

export const webhookRepository: RepositoryFactory<WebhookRepository> = () => notBuilt<WebhookRepository>("webhooks")
