import type { BroadcastRepository } from "@switchboard/core"
import { notBuilt } from "../internal/notBuilt.js"
import type { RepositoryFactory } from "../internal/sql.js"

export const broadcastRepository: RepositoryFactory<BroadcastRepository> = () => notBuilt<BroadcastRepository>("broadcasts")
