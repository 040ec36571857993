#!/usr/bin/env node
/**
 * `switchboard-whatsapp-simulator`: the simulator's command line (see the package README).
 *
 *   serve            (default) run the simulator until SIGINT/SIGTERM
 *   inbound          post a signed customer message to a webhook URL
 *   template-status  a template's review: the running simulator (--simulator, SIMULATOR_URL)
 *                    sets its status and posts message_template_status_update; without one,
 *                    the signed webhook is posted to --webhook-url directly
 *   templates        list, seed or recategorise a running simulator's templates
 *   received, reset  read or reset a running simulator through its control API
 *
 * Every command prints JSON lines on stdout; errors go to stderr with a non-zero exit.
 * Secrets are read from environment variables only (never options), and never printed.
 */
import { createReadStream, readFileSync } from "node:fs"
import { basename } from "node:path"
import { Readable } from "node:stream"
import { Command, Option } from "commander"
import { publicNumber } from "./control.js"
import { buildInboundContent, inboundMimeType, inboundOptions } from "./cliInbound.js"
import type { SimulatedMedia } from "./media.js"
import { httpUrl, integer } from "./cliParsers.js"
import { DEFAULT_NUMBER, digitsOf, inboundMessagePayload, newWamid, type SimulatedNumber, templateStatusPayload } from "./payloads.js"
import type { SimulatorSettings } from "./settings.js"
import { startSimulator } from "./simulator.js"
import { postWebhook } from "./webhook.js"

const print = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`)

/** The secret in the variable `name`; `null` when unset or empty. */
const secretFrom = (name: string): string | null => {
  const value = process.env[name]
  return value === undefined || value === "" ? null : value
}

const program = new Command("switchboard-whatsapp-simulator")
  .description("A local stand-in for Meta's WhatsApp Cloud API (Graph sends, number look-ups, signed webhooks)")
  .showHelpAfterError("(add --help for usage)")

program
  .command("serve", { isDefault: true })
  .description("answer Graph API calls and post status notifications to a webhook URL")
  .addOption(new Option("--port <port>", "port to listen on").env("SIMULATOR_PORT").default(4010).argParser(integer("--port", 0, 65535)))
  .addOption(new Option("--host <host>", "address to listen on").env("SIMULATOR_HOST").default("127.0.0.1"))
  .addOption(new Option("--numbers-file <file>", "a JSON list of numbers {phone_number_id, display_phone_number, waba_id, access_token}").env("SIMULATOR_NUMBERS_FILE"))
  .addOption(new Option("--phone-number-id <id>", "one number's id").env("SIMULATOR_PHONE_NUMBER_ID"))
  .addOption(new Option("--display-phone-number <phone>", "its display number").env("SIMULATOR_DISPLAY_PHONE_NUMBER"))
  .addOption(new Option("--waba-id <id>", "its WhatsApp Business Account id").env("SIMULATOR_WABA_ID"))
  .addOption(new Option("--access-token-env <name>", "the variable holding its access token").default("SIMULATOR_ACCESS_TOKEN"))
  .addOption(new Option("--webhook-url <url>", "where status notifications are posted").env("SIMULATOR_WEBHOOK_URL").argParser(httpUrl("--webhook-url")))
  .addOption(new Option("--app-secret-env <name>", "the variable holding the app secret that signs webhooks").default("SIMULATOR_APP_SECRET"))
  .addOption(new Option("--statuses <list>", "statuses after a send: comma-separated sent,delivered,read, or none").env("SIMULATOR_STATUSES").default("sent,delivered,read"))
  .addOption(new Option("--status-delay-ms <ms>", "wait before each status").env("SIMULATOR_STATUS_DELAY_MS").default(100).argParser(integer("--status-delay-ms", 0, 600_000)))
  .addOption(new Option("--delay-ms <ms>", "wait before answering each Graph call (a round trip to Meta)").env("SIMULATOR_DELAY_MS").default(0).argParser(integer("--delay-ms", 0, 600_000)))
  .action(async (options: ServeOptions, command: Command) => {
    let numbers: ReadonlyArray<SimulatedNumber>
    let statuses: SimulatorSettings["statuses"]
    try {
      numbers = numbersFrom(options)
      statuses = statusesFrom(options.statuses)
    } catch (error) {
      return command.error(`error: ${(error as Error).message}`)
    }
    const simulator = await startSimulator({
      port: options.port,
      host: options.host,
      numbers,
      webhookUrl: options.webhookUrl ?? null,
      appSecret: secretFrom(options.appSecretEnv),
      statuses,
      statusDelayMs: options.statusDelayMs,
      delayMs: options.delayMs,
      onEvent: print
    }).catch((error: Error) => command.error(`error: cannot listen on ${options.host}:${options.port} (${error.message})`))
    print({
      event: "listening",
      url: simulator.url,
      control_url: `${simulator.url}/_simulator`,
      numbers: simulator.numbers().map(publicNumber),
      webhook_url: simulator.settings.webhookUrl,
      app_secret_set: simulator.settings.appSecret !== null,
      statuses: simulator.settings.statuses,
      status_delay_ms: simulator.settings.statusDelayMs,
      delay_ms: options.delayMs
    })
    const stop = () => void simulator.close().then(() => process.exit(0))
    process.once("SIGINT", stop)
    process.once("SIGTERM", stop)
  })

inboundOptions(
  program.command("inbound").description("post a signed customer message (any type) to a webhook URL, as Meta does")
).action(async (options: InboundOptions, command: Command) => {
  const secret = requireSecret(options.appSecretEnv, command)
  const isMedia = ["image", "audio", "video", "document", "sticker"].includes(options.type)
  if (options.file !== undefined && !isMedia) return command.error(`error: --file is for a media type (image, audio, video, document, sticker), not ${options.type}`)
  const media = options.file === undefined ? undefined : await registerFile(options, command)
  let message
  try {
    message = buildInboundContent(media === undefined ? options : { ...options, mediaId: media.id, mimeType: media.mime_type })
  } catch (error) {
    return command.error(`error: ${(error as Error).message}`)
  }
  if (media !== undefined) message = { ...message, [options.type]: { ...(message[options.type] as object), sha256: media.sha256_base64 } }
  const number = { phone_number_id: options.phoneNumberId, display_phone_number: options.displayPhoneNumber, waba_id: options.wabaId }
  const id = newWamid()
  const payload = inboundMessagePayload({ number, from: options.from, profile_name: options.name, message, id })
  const delivery = await postWebhook(options.webhookUrl, payload, secret)
  print({ event: "inbound", id, type: message.type, from: digitsOf(options.from), ...deliveryLine(delivery) })
  if (delivery.status === null || delivery.status >= 300) process.exitCode = 1
})

program
  .command("template-status")
  .description(
    "a template's review: with --simulator (or SIMULATOR_URL) the running simulator sets the template's status and posts message_template_status_update with its id; without, the signed webhook is posted to --webhook-url"
  )
  .addOption(new Option("--simulator <url>", "the running simulator whose template it is").env("SIMULATOR_URL").argParser(httpUrl("--simulator")))
  .addOption(
    new Option("--webhook-url <url>", "where to post (with --simulator: instead of the simulator's own webhook URL)")
      .env("SIMULATOR_WEBHOOK_URL")
      .argParser(httpUrl("--webhook-url"))
  )
  .addOption(new Option("--app-secret-env <name>", "without --simulator: the variable holding the app secret").default("SIMULATOR_APP_SECRET"))
  .addOption(new Option("--waba-id <id>", "the WhatsApp Business Account id").env("SIMULATOR_WABA_ID").default(DEFAULT_NUMBER.waba_id))
  .requiredOption("--name <name>", "the template's name")
  .requiredOption("--language <code>", "its language, for example en_US")
  .requiredOption("--event <event>", "APPROVED, REJECTED, PAUSED, DISABLED, …")
  .option("--reason <reason>", "the rejection reason", "NONE")
  .option("--category <category>", "without --simulator: MARKETING, UTILITY or AUTHENTICATION (with it, the template's own)")
  .action(async (options: TemplateStatusOptions, command: Command) => {
    if (!/^[A-Z_]+$/.test(options.event)) return command.error("error: --event must be an upper-case status such as APPROVED")
    if (options.simulator !== undefined) {
      if (options.category !== undefined) {
        return command.error("error: with --simulator the webhook carries the template's own category (change it with `templates category`)")
      }
      const answer = (await control(options.simulator, "POST", "/templates/status", command, {
        waba_id: options.wabaId,
        name: options.name,
        language: options.language,
        status: options.event,
        reason: options.reason,
        ...(options.webhookUrl === undefined ? {} : { webhook_url: options.webhookUrl })
      })) as { template: { id: string; status: string }; delivery: { status: number | null; body: string; error: string | null } }
      const { template, delivery } = answer
      print({
        event: "template_status",
        name: options.name,
        language: options.language,
        status_event: options.event,
        template_id: template.id,
        status: template.status,
        ...deliveryLine(delivery)
      })
      if (delivery.status === null || delivery.status >= 300) process.exitCode = 1
      return
    }
    if (options.webhookUrl === undefined) {
      return command.error("error: set --webhook-url (or SIMULATOR_WEBHOOK_URL), or --simulator (SIMULATOR_URL) to have the running simulator post it")
    }
    const secret = requireSecret(options.appSecretEnv, command)
    const payload = templateStatusPayload({
      waba_id: options.wabaId,
      event: options.event,
      name: options.name,
      language: options.language,
      reason: options.reason,
      ...(options.category === undefined ? {} : { category: options.category })
    })
    const delivery = await postWebhook(options.webhookUrl, payload, secret)
    print({ event: "template_status", name: options.name, language: options.language, status_event: options.event, ...deliveryLine(delivery) })
    if (delivery.status === null || delivery.status >= 300) process.exitCode = 1
  })

const templates = program.command("templates").description("a running simulator's message templates (through its control API)")

/** `--simulator`, as `received` and `reset` take it. */
const simulatorOption = () =>
  new Option("--simulator <url>", "the simulator's URL").env("SIMULATOR_URL").default("http://127.0.0.1:4010").argParser(httpUrl("--simulator"))

templates
  .command("list")
  .description("print the templates of an account (every account's without --waba), one JSON line each")
  .addOption(simulatorOption())
  .option("--waba <id>", "the WhatsApp Business Account id")
  .action(async (options: { simulator: string; waba?: string }, command: Command) => {
    const query = options.waba === undefined ? "" : `?waba_id=${encodeURIComponent(options.waba)}`
    const answer = (await control(options.simulator, "GET", `/templates${query}`, command)) as { templates: Array<Record<string, unknown>> }
    for (const template of answer.templates) print(template)
  })

templates
  .command("seed")
  .description("put templates into an account as Meta holds them (no webhook), one JSON line per template")
  .addOption(simulatorOption())
  .requiredOption("--waba <id>", "the WhatsApp Business Account id")
  .requiredOption("--file <file>", "a JSON list of {name, language, category, components, status?, id?, rejected_reason?} (or Meta's {data: [...]} answer)")
  .action(async (options: { simulator: string; waba: string; file: string }, command: Command) => {
    let parsed: unknown
    try {
      parsed = JSON.parse(readFileSync(options.file, "utf8"))
    } catch (error) {
      return command.error(`error: --file ${options.file} is not a readable JSON file (${(error as Error).message})`)
    }
    const list = Array.isArray(parsed) ? parsed : (parsed as { data?: unknown } | null)?.data
    if (!Array.isArray(list)) return command.error("error: --file must hold a JSON list of templates, or Meta's {data: [...]} answer")
    const answer = (await control(options.simulator, "POST", "/templates", command, { waba_id: options.waba, templates: list })) as {
      templates: Array<Record<string, unknown>>
    }
    for (const template of answer.templates) print(template)
  })

templates
  .command("category")
  .description("recategorise a template: the simulator sets its category and posts template_category_update")
  .addOption(simulatorOption())
  .addOption(new Option("--waba <id>", "the WhatsApp Business Account id").env("SIMULATOR_WABA_ID").default(DEFAULT_NUMBER.waba_id))
  .option("--id <id>", "the template's id (else --name and --language)")
  .option("--name <name>", "the template's name")
  .option("--language <code>", "its language, for example en_US")
  .requiredOption("--category <category>", "MARKETING, UTILITY or AUTHENTICATION")
  .option("--webhook-url <url>", "where to post instead of the simulator's own webhook URL", httpUrl("--webhook-url"))
  .action(async (options: { simulator: string; waba: string; id?: string; name?: string; language?: string; category: string; webhookUrl?: string }, command: Command) => {
    if (options.id === undefined && (options.name === undefined || options.language === undefined)) {
      return command.error("error: name the template with --id, or with --name and --language")
    }
    const answer = (await control(options.simulator, "POST", "/templates/category", command, {
      waba_id: options.waba,
      ...(options.id === undefined ? { name: options.name, language: options.language } : { id: options.id }),
      category: options.category,
      ...(options.webhookUrl === undefined ? {} : { webhook_url: options.webhookUrl })
    })) as { template: { id: string; name: string; language: string; category: string }; previous_category: string; delivery: { status: number | null; body: string; error: string | null } }
    const { template, delivery } = answer
    print({
      event: "template_category",
      template_id: template.id,
      name: template.name,
      language: template.language,
      previous_category: answer.previous_category,
      new_category: template.category,
      ...deliveryLine(delivery)
    })
    if (delivery.status === null || delivery.status >= 300) process.exitCode = 1
  })

program
  .command("received")
  .description("print what a running simulator received, one JSON line per request")
  .addOption(new Option("--simulator <url>", "the simulator's URL").env("SIMULATOR_URL").default("http://127.0.0.1:4010").argParser(httpUrl("--simulator")))
  .option("--phone-number-id <id>", "only this number's requests")
  .action(async (options: { simulator: string; phoneNumberId?: string }, command: Command) => {
    const query = options.phoneNumberId === undefined ? "" : `?phone_number_id=${encodeURIComponent(options.phoneNumberId)}`
    const answer = await control(options.simulator, "GET", `/received${query}`, command)
    for (const entry of (answer as { received: Array<Record<string, unknown>> }).received) print(entry)
  })

program
  .command("reset")
  .description("make a running simulator forget what it received and its scripted rules")
  .addOption(new Option("--simulator <url>", "the simulator's URL").env("SIMULATOR_URL").default("http://127.0.0.1:4010").argParser(httpUrl("--simulator")))
  .action(async (options: { simulator: string }, command: Command) => {
    print((await control(options.simulator, "POST", "/reset", command)) as Record<string, unknown>)
  })

interface ServeOptions {
  port: number
  host: string
  numbersFile?: string
  phoneNumberId?: string
  displayPhoneNumber?: string
  wabaId?: string
  accessTokenEnv: string
  webhookUrl?: string
  appSecretEnv: string
  statuses: string
  statusDelayMs: number
  delayMs: number
}
type InboundOptions = Parameters<typeof buildInboundContent>[0] & {
  webhookUrl: string
  appSecretEnv: string
  from: string
  name: string
  phoneNumberId: string
  displayPhoneNumber: string
  wabaId: string
}
interface TemplateStatusOptions {
  simulator?: string
  webhookUrl?: string
  appSecretEnv: string
  wabaId: string
  name: string
  language: string
  event: string
  reason: string
  category?: string
}

/** The numbers of `--numbers-file`, else of the one-number options, else {@link DEFAULT_NUMBER}. */
const numbersFrom = (options: ServeOptions): ReadonlyArray<SimulatedNumber> => {
  if (options.numbersFile !== undefined) {
    let parsed: unknown
    try {
      parsed = JSON.parse(readFileSync(options.numbersFile, "utf8"))
    } catch (error) {
      throw new Error(`--numbers-file ${options.numbersFile} is not a readable JSON file (${(error as Error).message})`)
    }
    if (!Array.isArray(parsed) || parsed.length === 0) throw new Error("--numbers-file must hold a non-empty JSON list of numbers")
    return parsed as Array<SimulatedNumber>
  }
  if (options.phoneNumberId === undefined) return [DEFAULT_NUMBER]
  const token = secretFrom(options.accessTokenEnv)
  if (token === null) throw new Error(`set ${options.accessTokenEnv} to the access token of --phone-number-id (or name another variable with --access-token-env)`)
  return [
    {
      phone_number_id: options.phoneNumberId,
      display_phone_number: options.displayPhoneNumber ?? DEFAULT_NUMBER.display_phone_number,
      waba_id: options.wabaId ?? DEFAULT_NUMBER.waba_id,
      access_token: token
    }
  ]
}

const statusesFrom = (text: string): SimulatorSettings["statuses"] => {
  if (text === "none") return []
  const list = text.split(",").map((item) => item.trim())
  if (!list.every((item) => item === "sent" || item === "delivered" || item === "read")) {
    throw new Error("--statuses must be a comma-separated list of sent, delivered, read (or none)")
  }
  return list as SimulatorSettings["statuses"]
}

const requireSecret = (name: string, command: Command): string => {
  const secret = secretFrom(name)
  if (secret === null) command.error(`error: set ${name} to the app secret that signs webhooks (or name another variable with --app-secret-env)`)
  return secret!
}

const deliveryLine = (delivery: { status: number | null; body: string; error: string | null }) => ({
  answered: delivery.status,
  response: parseOrText(delivery.body),
  ...(delivery.error === null ? {} : { error: delivery.error })
})

const parseOrText = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/**
 * Hands `--file` to the running simulator (`POST /_simulator/media`, streamed), which then
 * serves it as the media of the message; exits with an error when it cannot.
 */
const registerFile = async (options: InboundOptions, command: Command): Promise<SimulatedMedia> => {
  const file = options.file!
  const query = new URLSearchParams({ mime_type: inboundMimeType(options), filename: basename(file), phone_number_id: options.phoneNumberId })
  const url = `${options.simulator!.replace(/\/+$/, "")}/_simulator/media?${query.toString()}`
  const response = await fetch(url, {
    method: "POST",
    body: Readable.toWeb(createReadStream(file)) as ReadableStream<Uint8Array>,
    duplex: "half"
  } as RequestInit).catch((error: Error) =>
    command.error(`error: --file could not be handed to the simulator at ${options.simulator} (${error.message})`)
  )
  const body = parseOrText(await response.text()) as { media?: SimulatedMedia }
  if (!response.ok || body.media === undefined) command.error(`error: ${url} answered HTTP ${response.status}: ${JSON.stringify(body)}`)
  return body.media!
}

/** Calls the control API of the simulator at `base` (with a JSON `body` when given); a refusal or an unreachable simulator ends the command. */
const control = async (base: string, method: string, path: string, command: Command, body?: unknown): Promise<unknown> => {
  const url = `${base.replace(/\/+$/, "")}/_simulator${path}`
  const response = await fetch(url, {
    method,
    ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
  }).catch((error: Error) =>
    command.error(`error: the simulator at ${base} could not be reached (${error.message})`)
  )
  const answer = parseOrText(await response.text())
  if (!response.ok) command.error(`error: ${url} answered HTTP ${response.status}: ${JSON.stringify(answer)}`)
  return answer
}

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exitCode = 1
})
