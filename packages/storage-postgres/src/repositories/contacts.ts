import type { ContactRepository } from "@switchboard/core"
import { notBuilt } from "../internal/notBuilt.js"
import type { RepositoryFactory } from "../internal/sql.js"

export const contactRepository: RepositoryFactory<ContactRepository> = () => notBuilt<ContactRepository>("contacts")
