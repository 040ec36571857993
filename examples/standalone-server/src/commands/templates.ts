import { Channels, type ChannelId, Organizations, RecordNotFound, TemplateSyncInterval, TemplateSyncs } from "@switchboard/core"
import type { Command } from "commander"
import { Effect, Exit } from "effect"
import { loadConfig } from "../config.js"
import { describeCause } from "../failures.js"
import { templateSyncConfig } from "../templateSync.js"
import { parseUuid, runAdminCommand } from "./admin.js"

/**
 * Registers `templates sync` (docs/templates-and-replies.md "Templates from Meta",
 * docs/standalone-server.md "Admin CLI"):
 *
 * - `templates sync --channel UUID` → `{added, updated, deleted, unchanged}`: reads the
 *   templates of the channel's WhatsApp Business Account from Meta's Graph API
 *   (`WHATSAPP_API_BASE_URL`, `WHATSAPP_API_VERSION`) now, inline, and brings the
 *   organization's in line, as `POST /channels/{uuid}/templates/sync` does (whichever
 *   organization owns the channel). While a server's loop syncs that account: `error: A
 *   template sync … is already running`, exit 1. The next sync is due
 *   `SWITCHBOARD_TEMPLATE_SYNC_MS` later (default 6 hours).
 *
 * @category cli
 */
export const registerTemplateCommands = (program: Command): void => {
  const templates = program.command("templates").description("message templates from Meta")
  templates
    .command("sync")
    .description("read the templates of the channel's WhatsApp Business Account from Meta now; prints {added, updated, deleted, unchanged}")
    .requiredOption("--channel <uuid>", "channel uuid", parseUuid)
    .action(async (options: { readonly channel: string }) => {
      const settings = await Effect.runPromiseExit(loadConfig(templateSyncConfig))
      if (Exit.isFailure(settings)) {
        process.stderr.write(`error: ${describeCause(settings.cause)}\n`)
        process.exitCode = 1
        return
      }
      const intervalMs = settings.value.intervalMs
      const program = syncAnywhere(options.channel.toLowerCase() as ChannelId)
      return runAdminCommand(intervalMs === undefined ? program : Effect.provideService(program, TemplateSyncInterval, intervalMs))
    })
}

/** Syncs the templates of a channel's account, whichever organization owns the channel (the CLI is given only its uuid). */
const syncAnywhere = (id: ChannelId) =>
  Effect.gen(function* () {
    const channels = yield* Channels
    for (const organization of yield* (yield* Organizations).list()) {
      if ((yield* channels.list(organization.id)).some((channel) => channel.uuid === id)) {
        return yield* (yield* TemplateSyncs).syncChannel(organization.id, id)
      }
    }
    return yield* new RecordNotFound({ missing: [{ resource: "channel", uuid: id }] })
  })
