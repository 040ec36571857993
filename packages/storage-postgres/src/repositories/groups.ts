import type { GroupRepository } from "@switchboard/core"
import { notBuilt } from "../internal/notBuilt.js"
import type { RepositoryFactory } from "../internal/sql.js"

export const groupRepository: RepositoryFactory<GroupRepository> = () => notBuilt<GroupRepository>("groups")
