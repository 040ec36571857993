import type { LabelRepository } from "@switchboard/core"
import { notBuilt } from "../internal/notBuilt.js"
import type { RepositoryFactory } from "../internal/sql.js"

export const labelRepository: RepositoryFactory<LabelRepository> = () => notBuilt<LabelRepository>("labels")
