import type { TemplateRepository } from "@switchboard/core"
import { notBuilt } from "../internal/notBuilt.js"
import type { RepositoryFactory } from "../internal/sql.js"

export const templateRepository: RepositoryFactory<TemplateRepository> = () => notBuilt<TemplateRepository>("templates")
