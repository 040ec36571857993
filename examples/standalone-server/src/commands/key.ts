import { MAX_ROTATION_OVERLAP_SECONDS, Organizations, type ApiKeyId, type OrganizationId } from "@switchboard/core"
import { type Command, InvalidArgumentError } from "commander"
import { Effect } from "effect"
import { parseUuid, runAdminCommand } from "./admin.js"

/**
 * Registers `key create`, `key rotate`, `key list` and `key revoke`
 * (docs/standalone-server.md "API keys") on the program.
 *
 * - `key create --org ORG_ID` → `{key_id, api_key}`: a new key for the organization,
 *   shown only here (the store keeps its SHA-256 hash);
 * - `key rotate --key KEY_ID [--expires-in 24h]` → `{key_id, api_key, previous_key_id,
 *   previous_expires_at}`: a new key for the key's organization, shown only here, and the
 *   old key's `expires_at` (ISO 8601 UTC), from which it is refused like a revoked key;
 * - `key list --org ORG_ID` → `[{key_id, prefix, created_at, expires_at, revoked_at}]`,
 *   oldest first: never a key or its hash;
 * - `key revoke --key KEY_ID` → `{key_id, revoked_at}` (ISO 8601 UTC); revoking a revoked
 *   key keeps its first `revoked_at`.
 *
 * @category cli
 */
export const registerKeyCommands = (program: Command): void => {
  const key = program.command("key").description("issue, rotate, list and revoke API keys")
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
    .command("rotate")
    .description(
      "issue a new key for the key's organization and give the old key an expiry; prints {key_id, api_key, previous_key_id, previous_expires_at}"
    )
    .requiredOption("--key <key_id>", "API key id of the key to replace (not the key itself)", parseUuid)
    .option(
      "--expires-in <duration>",
      "how long the old key keeps working (default 24h): a whole number and a unit s, m, h or d (90s, 15m, 24h, 7d; at most 7d; 0s: now)",
      parseDuration
    )
    .action((options: { readonly key: string; readonly expiresIn?: number }) =>
      runAdminCommand(
        Effect.flatMap(Organizations, (organizations) =>
          organizations.rotateApiKey(
            options.key as ApiKeyId,
            options.expiresIn === undefined ? {} : { expiresInSeconds: options.expiresIn }
          )
        ).pipe(
          Effect.map(({ issued, previous }) => ({
            key_id: issued.key_id,
            api_key: issued.api_key,
            previous_key_id: previous.id,
            previous_expires_at: previous.expires_at
          }))
        )
      )
    )
  key
    .command("list")
    .description("list an organization's API keys, oldest first; prints [{key_id, prefix, created_at, expires_at, revoked_at}]")
    .requiredOption("--org <org_id>", "organization id", parseUuid)
    .action((options: { readonly org: string }) =>
      runAdminCommand(
        Effect.flatMap(Organizations, (organizations) => organizations.listApiKeys(options.org as OrganizationId)).pipe(
          Effect.map((keys) =>
            keys.map((apiKey) => ({
              key_id: apiKey.id,
              prefix: apiKey.prefix,
              created_at: apiKey.created_at,
              expires_at: apiKey.expires_at,
              revoked_at: apiKey.revoked_at
            }))
          )
        )
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

/** Seconds per duration unit of {@link parseDuration}. */
const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3_600, d: 86_400 }

/**
 * Commander argument parser for `--expires-in`: a whole number written in digits and one
 * unit, `s`, `m`, `h` or `d` (`90s`, `15m`, `24h`, `7d`), into seconds; at most 7 days (core's
 * `MAX_ROTATION_OVERLAP_SECONDS`). Anything else (no unit, a fraction, a sign, spaces,
 * `1h30m`, more than 7 days) throws commander's `InvalidArgumentError`, so the command stops
 * before the store is opened.
 *
 * @category cli
 */
export const parseDuration = (value: string): number => {
  const match = /^(\d{1,9})([smhd])$/.exec(value)
  const seconds = match === null ? Number.NaN : Number(match[1]) * UNIT_SECONDS[match[2]!]!
  if (!Number.isSafeInteger(seconds)) {
    throw new InvalidArgumentError("It must be a whole number and a unit s, m, h or d, such as 90s, 15m, 24h or 7d.")
  }
  if (seconds > MAX_ROTATION_OVERLAP_SECONDS) throw new InvalidArgumentError("It must be at most 7d (604800s).")
  return seconds
}
