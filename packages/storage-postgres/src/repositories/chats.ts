import type { ChatRepository } from "@switchboard/core"
import { notBuilt } from "../internal/notBuilt.js"
import type { RepositoryFactory } from "../internal/sql.js"

export const chatRepository: RepositoryFactory<ChatRepository> = () => notBuilt<ChatRepository>("chats")
