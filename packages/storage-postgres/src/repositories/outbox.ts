import type { OutboxRepository } from "@switchboard/core"
import { notBuilt } from "../internal/notBuilt.js"
import type { RepositoryFactory } from "../internal/sql.js"

export const outboxRepository: RepositoryFactory<OutboxRepository> = () => notBuilt<OutboxRepository>("outbox")
