import type { BasicReplyRepository } from "@switchboard/core"
import { notBuilt } from "../internal/notBuilt.js"
import type { RepositoryFactory } from "../internal/sql.js"

export const basicReplyRepository: RepositoryFactory<BasicReplyRepository> = () => notBuilt<BasicReplyRepository>("basicReplies")
