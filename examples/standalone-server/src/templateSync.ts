import type { TemplateSyncHandlerOptions } from "@switchboard/http-adapter"
import { Config, Option } from "effect"
import { millisecondsConfig } from "./webhooks.js"

/**
 * The template sync of the standalone server (docs/templates-and-replies.md "Templates
 * from Meta"), read from the environment; the server's handler runs its loop:
 * - `SWITCHBOARD_TEMPLATE_SYNC_MS`: the time from one sync of a WhatsApp Business
 *   Account's templates to its next, in milliseconds (default `21600000`, 6 hours). A new
 *   channel's account is synced within seconds whatever this is.
 * Unset or empty: the default. A bad value fails with an error naming its variable. The
 * admin CLI's `templates sync` reads it too (the next sync it schedules).
 *
 * @category config
 */
export const templateSyncConfig: Config.Config<TemplateSyncHandlerOptions> = millisecondsConfig("SWITCHBOARD_TEMPLATE_SYNC_MS").pipe(
  Config.map((intervalMs): TemplateSyncHandlerOptions => Option.match(intervalMs, { onNone: () => ({}), onSome: (value) => ({ intervalMs: value }) }))
)
