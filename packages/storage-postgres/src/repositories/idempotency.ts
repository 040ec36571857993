import type { IdempotencyRepository } from "@switchboard/core"
import { notBuilt } from "../internal/notBuilt.js"
import type { RepositoryFactory } from "../internal/sql.js"

export const idempotencyRepository: RepositoryFactory<IdempotencyRepository> = () => notBuilt<IdempotencyRepository>("idempotency")
