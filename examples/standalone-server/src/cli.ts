#!/usr/bin/env node
/**
 * The Switchboard admin CLI (docs/standalone-server.md): `npm run -s cli -- <command>` from the
 * repository root, or `switchboard <command>` once installed. Every command prints JSON
 * (2-space indented) on stdout; errors go to stderr with a non-zero exit code and nothing
 * written. The store is the one named by `DATABASE_URL` (see `config.ts`).
 *
 * Each command group lives in its own module under `commands/` and is registered here.
 *
 * @packageDocumentation
 */
import { Command, CommanderError } from "commander"
import { registerBackupCommand } from "./commands/backup.js"
import { registerChannelCommands } from "./commands/channel.js"
import { registerImportCommand } from "./commands/import.js"
import { registerKeyCommands } from "./commands/key.js"
import { registerOrganizationCommands } from "./commands/org.js"
import { registerSecretKeyCommands } from "./commands/secretKey.js"
import { registerSeedCommand } from "./commands/seed.js"
import { registerTemplateCommands } from "./commands/templates.js"
import { registerWebhookRejectCommands } from "./commands/webhookRejects.js"

/**
 * The admin program with every command registered. Parsing never calls `process.exit`:
 * usage errors are printed on stderr by commander and thrown as `CommanderError`.
 *
 * @category cli
 */
const createProgram = (): Command => {
  const program = new Command("switchboard")
    .description("Switchboard admin CLI: organizations, API keys (create, rotate with an overlap, list, revoke), channels, template sync, data import, refused webhook parts, SQLite backups and the secret key's rotation. Prints JSON on stdout.")
    .exitOverride()
    .showHelpAfterError("(add --help for usage)")
  registerOrganizationCommands(program)
  registerKeyCommands(program)
  registerChannelCommands(program)
  registerTemplateCommands(program)
  registerImportCommand(program)
  registerSeedCommand(program)
  registerWebhookRejectCommands(program)
  registerBackupCommand(program)
  registerSecretKeyCommands(program)
  return program
}

try {
  await createProgram().parseAsync(process.argv)
} catch (error) {
  if (!(error instanceof CommanderError)) throw error
  process.exitCode = error.exitCode
}
