import { Organizations, type ApiKeyId, type OrganizationId } from "@switchboard/core"
import type { Command } from "commander"
import { Effect } from "effect"
import { parseUuid, runAdminCommand } from "./admin.js"

/**
 * Registers `key create` and `key revoke` (docs/standalone-server.md) on the program.
 *
 * - `key create --org ORG_ID` → `{key_id, api_key}`: a new key for the organization,
 *   shown only here (the store keeps its SHA-256 hash);
 * - `key revoke --key KEY_ID` → `{key_id, revoked_at}` (ISO 8601 UTC); revoking a revoked
 *   key keeps its first `revoked_at`.
 *
 * @category cli
 */
export const registerKeyCommands = (program: Command): void => {
  const key = program.command("key").description("issue and revoke API keys")
  key
    .command("create")
    .description("issue a new API key for an organization; prints {key_id, api_key}")
    .requiredOption("--org <org_id>", "organization id", parseUuid)
    .action((options: { readonly org: string }) =>
      runAdminCommand(
        Effect.flatMap(Organizations, (organizations) =>
          organizations.issueApiKey(options.org as OrganizationId)
        ).pipe(Effect.map((issued) => ({ key_id: issued.key_id, api_key: issued.api_key })))
      )
    )
  key
    .command("revoke")
    .description("revoke an API key by its id; prints {key_id, revoked_at}")
    .requiredOption("--key <key_id>", "API key id (not the key itself)", parseUuid)
    .action((options: { readonly key: string }) =>
      runAdminCommand(
        Effect.flatMap(Organizations, (organizations) => organizations.revokeApiKey(options.key as ApiKeyId)).pipe(
          Effect.map((revoked) => ({ key_id: revoked.id, revoked_at: revoked.revoked_at }))
        )
      )
    )
}
