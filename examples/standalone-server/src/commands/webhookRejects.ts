import { type OrganizationId, Storage } from "@switchboard/core"
import { type Command, InvalidArgumentError } from "commander"
import { Effect } from "effect"
import { parseNonNegativeInteger, parseUuid, runAdminCommand } from "./admin.js"

/** Most refused parts one `webhook-rejects list` prints, and the default. */
const MAX_LIMIT = 1000
const DEFAULT_LIMIT = 50

/**
 * Registers `webhook-rejects list [--org ORG_ID] [--limit N]` (docs/whatsapp-webhooks.md
 * "Refused parts"): the parts of WhatsApp webhooks Switchboard answered 200 but refused
 * (a message core refused, a part of unexpected shape, an unknown number…), newest first,
 * as `[{id, received_at, organization_id, phone_number_id, reason, item}, …]` — of one
 * organization with `--org`, else of all (unrouted ones included); `--limit` 1–1000,
 * default 50. Kept 30 days.
 *
 * @category cli
 */
export const registerWebhookRejectCommands = (program: Command): void => {
  const rejects = program.command("webhook-rejects").description("inspect the parts of WhatsApp webhooks that were refused (kept 30 days)")
  rejects
    .command("list")
    .description("list refused webhook parts, newest first, with their raw JSON")
    .option("--org <org_id>", "only those routed to this organization", parseUuid)
    .option("--limit <n>", `at most this many, 1–${MAX_LIMIT} (default ${DEFAULT_LIMIT})`, parseLimit)
    .action((options: { readonly org?: string; readonly limit?: number }) =>
      runAdminCommand(
        Effect.flatMap(Storage, (storage) =>
          storage.webhookRejects.list({
            limit: options.limit ?? DEFAULT_LIMIT,
            ...(options.org === undefined ? {} : { organizationId: options.org.toLowerCase() as OrganizationId })
          })
        )
      )
    )
}

/** `--limit`: an integer from 1 to 1000. */
const parseLimit = (value: string): number => {
  const limit = parseNonNegativeInteger(value)
  if (limit < 1 || limit > MAX_LIMIT) throw new InvalidArgumentError(`It must be from 1 to ${MAX_LIMIT}.`)
  return limit
}
