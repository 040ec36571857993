import type { OrganizationRepository } from "@switchboard/core"
import { notBuilt } from "../internal/notBuilt.js"
import type { RepositoryFactory } from "../internal/sql.js"

export const organizationRepository: RepositoryFactory<OrganizationRepository> = () => notBuilt<OrganizationRepository>("organizations")
