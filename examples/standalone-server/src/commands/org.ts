import {
  Organizations,
  type Organization,
  type OrganizationId,
  type Plan,
  type SubscriptionStatus
} from "@switchboard/core"
import { Option, type Command } from "commander"
import { Effect } from "effect"
import { definedFields, failUsage, parsePlanLimit, parseUuid, planLimit, runAdminCommand } from "./admin.js"

/**
 * An organization as the admin CLI prints it (`org update`, `org list`): never its keys.
 *
 * @category cli
 */
export interface OrganizationView {
  readonly org_id: string
  readonly name: string
  readonly plan: Plan
  readonly subscription: SubscriptionStatus
}

/**
 * Registers `org create`, `org update` and `org list` (docs/standalone-server.md) on the program.
 *
 * - `org create --name N [--contacts-limit N|unlimited] [--label-limit N|unlimited]
 *   [--media-bytes-limit BYTES|unlimited] [--no-api-access] [--inactive]` → `{org_id, key_id, api_key}` (the key is shown
 *   only here);
 * - `org update --id ORG_ID [--name N] [--contacts-limit N|unlimited]
 *   [--label-limit N|unlimited] [--media-bytes-limit BYTES|unlimited]
 *   [--api-access|--no-api-access] [--active|--inactive]`
 *   → `{org_id, name, plan, subscription}`;
 * - `org list` → `[{org_id, name, plan, subscription}]`, oldest first.
 *
 * @category cli
 */
export const registerOrganizationCommands = (program: Command): void => {
  const org = program.command("org").description("create, update and list organizations")
  registerCreate(org)
  registerUpdate(org)
  org
    .command("list")
    .description("list every organization (never their keys)")
    .action(() =>
      runAdminCommand(
        Effect.flatMap(Organizations, (organizations) => organizations.list()).pipe(
          Effect.map((all) => all.map(organizationView))
        )
      )
    )
}

/**
 * The printed form of an organization.
 *
 * @category cli
 */
export const organizationView = (organization: Organization): OrganizationView => ({
  org_id: organization.id,
  name: organization.name,
  plan: organization.plan,
  subscription: organization.subscription
})

interface CreateOptions {
  readonly name: string
  readonly contactsLimit?: number | "unlimited"
  readonly labelLimit?: number | "unlimited"
  readonly mediaBytesLimit?: number | "unlimited"
  readonly apiAccess: boolean
  readonly inactive?: true
}

interface UpdateOptions {
  readonly id: string
  readonly name?: string
  readonly contactsLimit?: number | "unlimited"
  readonly labelLimit?: number | "unlimited"
  readonly mediaBytesLimit?: number | "unlimited"
  readonly apiAccess?: boolean
  readonly active?: true
  readonly inactive?: true
}

const registerCreate = (org: Command): void => {
  org
    .command("create")
    .description("create an organization and its first API key; prints {org_id, key_id, api_key}")
    .requiredOption("--name <name>", "organization name (1-255 characters)")
    .option("--contacts-limit <count>", 'most contacts the plan allows, or "unlimited" (default)', parsePlanLimit)
    .option("--label-limit <count>", 'most labels the plan allows, or "unlimited" (default)', parsePlanLimit)
    .option("--media-bytes-limit <bytes>", 'most bytes of stored media the plan allows, or "unlimited" (default)', parsePlanLimit)
    .option("--no-api-access", "plan without access to the Developer API")
    .option("--inactive", "create the subscription inactive")
    .action((options: CreateOptions) =>
      runAdminCommand(
        Effect.gen(function* () {
          const organizations = yield* Organizations
          const organization = yield* organizations.create({
            name: options.name,
            plan: definedFields({
              contacts_limit: planLimit(options.contactsLimit),
              label_limit: planLimit(options.labelLimit),
              media_bytes_limit: planLimit(options.mediaBytesLimit),
              api_access: options.apiAccess
            }),
            subscription: options.inactive ? "inactive" : "active"
          })
          const issued = yield* organizations.issueApiKey(organization.id)
          return { org_id: organization.id, key_id: issued.key_id, api_key: issued.api_key }
        })
      )
    )
}

const registerUpdate = (org: Command): void => {
  org
    .command("update")
    .description("change an organization's name, plan or subscription; prints the organization")
    .requiredOption("--id <org_id>", "organization id", parseUuid)
    .option("--name <name>", "new name (1-255 characters)")
    .option("--contacts-limit <count>", 'most contacts the plan allows, or "unlimited"', parsePlanLimit)
    .option("--label-limit <count>", 'most labels the plan allows, or "unlimited"', parsePlanLimit)
    .option("--media-bytes-limit <bytes>", 'most bytes of stored media the plan allows, or "unlimited"', parsePlanLimit)
    .option("--api-access", "allow the Developer API")
    .option("--no-api-access", "deny the Developer API")
    .addOption(new Option("--active", "activate the subscription").conflicts("inactive"))
    .addOption(new Option("--inactive", "deactivate the subscription"))
    .action((options: UpdateOptions, command: Command) => {
      const plan = definedFields({
        contacts_limit: planLimit(options.contactsLimit),
        label_limit: planLimit(options.labelLimit),
        media_bytes_limit: planLimit(options.mediaBytesLimit),
        api_access: options.apiAccess
      })
      const subscription: SubscriptionStatus | undefined = options.active
        ? "active"
        : options.inactive
          ? "inactive"
          : undefined
      if (options.name === undefined && Object.keys(plan).length === 0 && subscription === undefined) {
        failUsage(command, "nothing to update: give --name, a limit, --[no-]api-access, --active or --inactive")
      }
      return runAdminCommand(
        Effect.flatMap(Organizations, (organizations) =>
          organizations.update(options.id as OrganizationId, definedFields({ name: options.name, plan, subscription }))
        ).pipe(Effect.map(organizationView))
      )
    })
}
