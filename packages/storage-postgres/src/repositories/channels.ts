import type { ChannelRepository } from "@switchboard/core"
import { notBuilt } from "../internal/notBuilt.js"
import type { RepositoryFactory } from "../internal/sql.js"

export const channelRepository: RepositoryFactory<ChannelRepository> = () => notBuilt<ChannelRepository>("channels")
