import { readFileSync } from "node:fs"
import { Channels, type ChannelId, Organizations, RecordNotFound, type OrganizationId } from "@switchboard/core"
import { type Command, Option } from "commander"
import { Effect } from "effect"
import { failUsage, parseUuid, runAdminCommand } from "./admin.js"

/**
 * Registers `channel add`, `channel list` and `channel remove` (docs/channels.md "Admin
 * CLI") on the program. The access token is never an argument (it would land in shell
 * history and `ps`): it is read from a file or an environment variable.
 *
 * - `channel add --org ORG_ID --phone-number-id P --waba-id W [--display-phone-number +E164]
 *   [--throughput-mps N] (--access-token-file FILE | --access-token-env NAME)` → the channel
 *   (`throughput_mps` an integer 1–1 000, default 50; core checks it); the token is
 *   verified with Meta's Graph API first (`WHATSAPP_API_BASE_URL`, `WHATSAPP_API_VERSION`);
 *   with SQLite and no `SWITCHBOARD_SECRET_KEY`, it creates `<data dir>/secret.key` when
 *   missing, like the server;
 * - `channel list --org ORG_ID` → `[channel, …]`, oldest first (the default first);
 * - `channel remove --channel UUID` → `{uuid, deleted: true}`.
 *
 * @category cli
 */
export const registerChannelCommands = (program: Command): void => {
  const channel = program.command("channel").description("connect, list and remove organizations' WhatsApp numbers")
  channel
    .command("add")
    .description("connect a WhatsApp number (the token is verified with Meta first); prints the channel")
    .requiredOption("--org <org_id>", "organization id", parseUuid)
    .requiredOption("--phone-number-id <id>", "Meta's phone number id")
    .requiredOption("--waba-id <id>", "WhatsApp Business Account id")
    .option("--display-phone-number <e164>", "the number in E.164 (default: Meta's)")
    .option("--throughput-mps <n>", "messages per second the send queue will pace it to, 1-1000 (default: 50)", Number)
    .addOption(new Option("--access-token-file <file>", "file holding the access token").conflicts("accessTokenEnv"))
    .addOption(new Option("--access-token-env <name>", "environment variable holding the access token"))
    .action((options: AddOptions, command: Command) => {
      const access_token = readAccessToken(command, options)
      return runAdminCommand(
        Effect.flatMap(Channels, (channels) =>
          channels.add(options.org as OrganizationId, {
            phone_number_id: options.phoneNumberId,
            waba_id: options.wabaId,
            access_token,
            ...(options.displayPhoneNumber === undefined ? {} : { display_phone_number: options.displayPhoneNumber }),
            ...(options.throughputMps === undefined ? {} : { throughput_mps: options.throughputMps })
          })
        ),
        { createSecretKey: true }
      )
    })
  channel
    .command("list")
    .description("list an organization's channels, oldest first (never their tokens)")
    .requiredOption("--org <org_id>", "organization id", parseUuid)
    .action((options: { readonly org: string }) =>
      runAdminCommand(Effect.flatMap(Channels, (channels) => channels.list(options.org as OrganizationId)))
    )
  channel
    .command("remove")
    .description("disconnect a channel by its uuid; prints {uuid, deleted: true}")
    .requiredOption("--channel <uuid>", "channel uuid", parseUuid)
    .action((options: { readonly channel: string }) => runAdminCommand(removeAnywhere(options.channel.toLowerCase() as ChannelId)))
}

interface AddOptions {
  readonly org: string
  readonly phoneNumberId: string
  readonly wabaId: string
  readonly displayPhoneNumber?: string
  readonly throughputMps?: number
  readonly accessTokenFile?: string
  readonly accessTokenEnv?: string
}

/**
 * The access token from `--access-token-file` (trailing newline dropped) or
 * `--access-token-env`; exactly one must be given and yield a non-empty token, else a
 * usage error (exit non-zero, nothing written). Messages never contain the token.
 */
const readAccessToken = (command: Command, options: AddOptions): string => {
  if ((options.accessTokenFile === undefined) === (options.accessTokenEnv === undefined)) {
    return failUsage(command, "give the access token with exactly one of --access-token-file FILE or --access-token-env NAME")
  }
  let token: string | undefined
  if (options.accessTokenFile !== undefined) {
    try {
      token = readFileSync(options.accessTokenFile, "utf8").trim()
    } catch (error) {
      return failUsage(command, `cannot read --access-token-file ${options.accessTokenFile}: ${(error as NodeJS.ErrnoException).code ?? "error"}`)
    }
  } else {
    token = process.env[options.accessTokenEnv!]?.trim()
  }
  if (token === undefined || token === "") {
    return failUsage(
      command,
      options.accessTokenFile !== undefined
        ? `--access-token-file ${options.accessTokenFile} is empty`
        : `environment variable ${options.accessTokenEnv} is unset or empty`
    )
  }
  return token
}

/** Removes a channel whichever organization owns it (the CLI is given only its uuid). */
const removeAnywhere = (id: ChannelId) =>
  Effect.gen(function* () {
    const channels = yield* Channels
    for (const organization of yield* (yield* Organizations).list()) {
      if ((yield* channels.list(organization.id)).some((channel) => channel.uuid === id)) {
        yield* channels.remove(organization.id, id)
        return { uuid: id, deleted: true as const }
      }
    }
    return yield* new RecordNotFound({ missing: [{ resource: "channel", uuid: id }] })
  })
