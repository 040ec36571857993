import { rotateSecretKey } from "@switchboard/core"
import type { Command } from "commander"
import { runAdminCommand } from "./admin.js"

/**
 * Registers `secret-key rotate` (docs/deployment.md "Rotating the secret key") on the
 * program: with `SWITCHBOARD_SECRET_KEY="NEW,OLD"` (at least two keys, the new one first),
 * seals every channel access token and every webhook endpoint's current and previous
 * signing secret again under the first key, each with a compare-and-set on the sealed text
 * it read, then the store's key check value. Prints
 * `{channel_tokens_resealed, webhook_secrets_resealed, already_current, unreadable, key_check}`
 * (counts only, never a secret). Idempotent and resumable: interrupted, run it again;
 * servers started with the same keys may serve meanwhile. With fewer than two keys it
 * changes nothing and fails.
 *
 * @category cli
 */
export const registerSecretKeyCommands = (program: Command): void => {
  const secretKey = program
    .command("secret-key")
    .description("rotate the secret key that encrypts channel tokens and webhook signing secrets")
  secretKey
    .command("rotate")
    .description(
      'seal every channel token and webhook signing secret again under the first key of SWITCHBOARD_SECRET_KEY="NEW,OLD" (needs both); resumable; prints counts'
    )
    .action(() => runAdminCommand(rotateSecretKey))
}
