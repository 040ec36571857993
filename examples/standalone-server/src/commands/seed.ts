import {
  type ChatId,
  type ChatImportEntry,
  type ContactId,
  type ContactImportRow,
  type GroupId,
  type LabelId,
  type MessageId,
  nameKey,
  type NewMessage,
  type OrganizationId,
  Organizations,
  PlanLimitExceeded,
  SecureRandom,
  Storage
} from "@switchboard/core"
import { Presets, SingleBar } from "cli-progress"
import type { Command } from "commander"
import { Clock, Effect } from "effect"
import { failUsage, parseNonNegativeInteger, parseUuid, runAdminCommand } from "./admin.js"
// seedData.js loads faker's locales: imported on use, so other commands start fast.
import type { makeSeedGenerator, SeedChat } from "./seedData.js"

/**
 * Contacts (and their chats) written per store call: each batch is a few transactions
 * (`contacts.importBulk`, one `labels.assign` per label, `chats.importChats`).
 *
 * @category cli
 */
export const SEED_BATCH_SIZE = 10_000

/**
 * What `seed` prints on stdout: the organization, the seed used (given or drawn), what was
 * written, the group and label uuids by name, the agent ids chats are assigned to, and the
 * time it took in milliseconds.
 *
 * @category cli
 */
export interface SeedSummary {
  readonly org_id: string
  readonly seed: number
  readonly contacts: { readonly created: number; readonly updated: number }
  readonly chats: { readonly created: number; readonly matched: number }
  readonly messages: number
  readonly groups: Readonly<Record<string, GroupId>>
  readonly labels: Readonly<Record<string, LabelId>>
  readonly agents: ReadonlyArray<string>
  readonly duration_ms: number
}

/**
 * Registers `seed --org ID --contacts N --chats N [--seed N]`
 * (docs/standalone-server.md "seed"): writes N synthetic contacts (names, e-mails, cities
 * and valid mobile numbers of eight countries; in groups and under labels of a small pool)
 * and chats for the first `--chats` of them, each with a few messages, a status, an
 * assignee or none, a favorite flag, an unread count and a last message within the past
 * six months. A progress bar goes to stderr (when it is a terminal); the
 * {@link SeedSummary} to stdout.
 *
 * Rules: `--chats` may not exceed `--contacts` (one chat per contact); when the
 * organization's `contacts_limit` cannot hold `--contacts` more contacts, nothing is
 * written and the command exits 1 naming the limit; labels of the pool are created only
 * while `label_limit` allows (missing ones are skipped). Bad arguments exit non-zero with
 * a message on stderr before the store is opened. The same `--seed` yields the same
 * people, phones, texts and spread (uuids and times differ: times are relative to now).
 * Writes go in batches of {@link SEED_BATCH_SIZE} per transaction, so an interrupted run
 * keeps the batches it finished.
 *
 * @category cli
 */
export const registerSeedCommand = (program: Command): void => {
  program
    .command("seed")
    .description("write synthetic contacts and chats (with messages) into an organization, with a progress bar")
    .requiredOption("--org <org_id>", "organization id", parseUuid)
    .requiredOption("--contacts <n>", "number of contacts to create", parseNonNegativeInteger)
    .requiredOption("--chats <n>", "number of chats to create, one per new contact (at most --contacts)", parseNonNegativeInteger)
    .option("--seed <n>", "seed of the generator, for reproducible data", parseNonNegativeInteger)
    .action(function (this: Command, options: SeedOptions) {
      if (options.chats > options.contacts) {
        failUsage(this, `--chats (${options.chats}) must not exceed --contacts (${options.contacts}): every chat needs its own contact`)
      }
      return runAdminCommand(seed(options))
    })
}

interface SeedOptions {
  readonly org: string
  readonly contacts: number
  readonly chats: number
  readonly seed?: number
}

const seed = (options: SeedOptions) =>
  Effect.gen(function* () {
    const started = yield* Clock.currentTimeMillis
    const organization = yield* (yield* Organizations).get(options.org as OrganizationId)
    const storage = yield* Storage
    const limit = organization.plan.contacts_limit
    if (limit !== null && options.contacts > 0) {
      const usage = (yield* storage.contacts.list(organization.id, { page: 1, per_page: 1 })).total
      if (usage + options.contacts > limit) {
        return yield* new PlanLimitExceeded({ plan_limit: "contacts_limit", limit, usage, requested: options.contacts })
      }
    }
    const { makeSeedGenerator, SEED_GROUPS, SEED_LABELS } = yield* Effect.promise(() => import("./seedData.js"))
    const seedValue = options.seed ?? Math.floor(Math.random() * 2 ** 31)
    const generator = makeSeedGenerator({ seed: seedValue, now: started })
    const groups = yield* ensureGroups(organization.id, SEED_GROUPS, new Date(started).toISOString())
    const labels = yield* ensureLabels(organization.id, SEED_LABELS, organization.plan.label_limit, new Date(started).toISOString())
    const totals = { created: 0, updated: 0, chatsCreated: 0, chatsMatched: 0, messages: 0 }
    const write = (start: number) =>
      writeBatch(organization.id, generator, { start, size: Math.min(SEED_BATCH_SIZE, options.contacts - start), chats: options.chats, limit, groups, labels })
    yield* withProgressBar(options.contacts, (advance) =>
      Effect.gen(function* () {
        for (let start = 0; start < options.contacts; start += SEED_BATCH_SIZE) {
          const batch = yield* write(start)
          totals.created += batch.created
          totals.updated += batch.updated
          totals.chatsCreated += batch.chatsCreated
          totals.chatsMatched += batch.chatsMatched
          totals.messages += batch.messages
          advance(batch.created + batch.updated)
          yield* Effect.yieldNow()
        }
      })
    )
    return {
      org_id: organization.id,
      seed: seedValue,
      contacts: { created: totals.created, updated: totals.updated },
      chats: { created: totals.chatsCreated, matched: totals.chatsMatched },
      messages: totals.messages,
      groups: Object.fromEntries(SEED_GROUPS.map((name, index) => [name, groups[index]!])),
      labels: Object.fromEntries(
        SEED_LABELS.flatMap(({ name }, index) => (labels[index] === undefined ? [] : [[name, labels[index]]]))
      ),
      agents: generator.agents,
      duration_ms: (yield* Clock.currentTimeMillis) - started
    } satisfies SeedSummary
  })

type Generator = ReturnType<typeof makeSeedGenerator>

/** Writes contacts `start…start+size-1`, their labels, and the chats among the first `chats`. */
const writeBatch = (
  organizationId: OrganizationId,
  generator: Generator,
  batch: {
    readonly start: number
    readonly size: number
    readonly chats: number
    readonly limit: number | null
    readonly groups: ReadonlyArray<GroupId>
    readonly labels: ReadonlyArray<LabelId | undefined>
  }
) =>
  Effect.gen(function* () {
    const storage = yield* Storage
    const random = yield* SecureRandom
    const now = new Date(yield* Clock.currentTimeMillis).toISOString()
    const contacts = Array.from({ length: batch.size }, generator.contact)
    const rows: Array<ContactImportRow> = contacts.map((contact) => ({
      phone: contact.phone,
      details: contact.details,
      groups: contact.groups.map((index) => ({ _tag: "ById", uuid: batch.groups[index]! }))
    }))
    const outcome = yield* storage.contacts.importBulk(organizationId, {
      rows,
      ids: yield* random.uuids(rows.length),
      contactsLimit: batch.limit,
      now,
      // Synthetic data writes no webhook events.
      events: false
    })
    if (outcome._tag === "LimitExceeded") return yield* new PlanLimitExceeded({ plan_limit: "contacts_limit", ...outcome })
    if (outcome._tag === "GroupsNotFound") return yield* Effect.dieMessage(`seed: groups ${outcome.uuids.join(", ")} vanished`)
    const contactIds = outcome.result.contacts.map((entry) => entry.uuid)
    for (const [index, labelId] of batch.labels.entries()) {
      const carriers = contactIds.filter((_, position) => contacts[position]!.labels.includes(index))
      if (labelId === undefined || carriers.length === 0) continue
      const assigned = yield* storage.labels.assign(organizationId, labelId, carriers, now)
      if (assigned._tag === "NotFound") return yield* Effect.dieMessage(`seed: label ${labelId} or contacts vanished`)
    }
    const chatCount = Math.max(0, Math.min(batch.size, batch.chats - batch.start))
    const chats = Array.from({ length: chatCount }, (_, index) => generator.chat(batch.start + index, batch.chats))
    const written = chatCount === 0 ? [] : yield* importChats(organizationId, contactIds.slice(0, chatCount), chats, now)
    return {
      created: outcome.result.created,
      updated: outcome.result.updated,
      chatsCreated: written.filter((chat) => chat.created).length,
      chatsMatched: written.filter((chat) => !chat.created).length,
      messages: written.reduce((total, chat) => total + chat.messagesAdded, 0)
    }
  })

/** Writes the generated chats of these contacts in one `chats.importChats` call. */
const importChats = (organizationId: OrganizationId, contactIds: ReadonlyArray<ContactId>, chats: ReadonlyArray<SeedChat>, now: string) =>
  Effect.gen(function* () {
    const storage = yield* Storage
    const ids = yield* (yield* SecureRandom).uuids(chats.reduce((total, chat) => total + 1 + chat.messages.length, 0))
    let next = 0
    const entries = chats.map(
      (chat, index): ChatImportEntry => ({
        contactId: contactIds[index]!,
        chatId: ids[next++] as ChatId,
        created_at: new Date(chat.createdAt).toISOString(),
        attributes: chat.attributes,
        messages: chat.messages.map((message): NewMessage => {
          const at = new Date(message.at).toISOString()
          return {
            uuid: ids[next++] as MessageId,
            direction: message.direction,
            type: "text",
            text: message.text,
            template: null,
            media: null,
            content: null,
            status: message.direction === "inbound" ? "read" : "delivered",
            provider_message_id: null,
            failure: null,
            channel_uuid: null,
            transport: null,
            attempts: 0,
            next_attempt_at: null,
            broadcast_uuid: null,
            reply_to: null,
            reactions: [],
            created_at: at,
            updated_at: at
          }
        })
      })
    )
    const outcome = yield* storage.chats.importChats(organizationId, { chats: entries, now })
    if (outcome._tag === "ContactsNotFound") return yield* Effect.dieMessage("seed: contacts vanished before their chats were written")
    return outcome.chats
  })

/** The uuids of the groups named `names`, created when missing (matched by name otherwise). */
const ensureGroups = (organizationId: OrganizationId, names: ReadonlyArray<string>, now: string) =>
  Effect.gen(function* () {
    const storage = yield* Storage
    const random = yield* SecureRandom
    const found = new Map((yield* storage.groups.findByNames(organizationId, names)).map((group) => [nameKey(group.name), group.uuid]))
    for (const name of names) {
      if (found.has(nameKey(name))) continue
      const uuid = (yield* random.uuid()) as GroupId
      const outcome = yield* storage.groups.create(organizationId, { uuid, name, now })
      if (outcome._tag === "Written") found.set(nameKey(name), uuid)
    }
    return names.map((name) => found.get(nameKey(name))!)
  })

/** The uuids of `wanted` labels: existing ones matched by name, missing ones created while `label_limit` allows. */
const ensureLabels = (
  organizationId: OrganizationId,
  wanted: ReadonlyArray<{ readonly name: string; readonly color: string }>,
  labelLimit: number | null,
  now: string
) =>
  Effect.gen(function* () {
    const storage = yield* Storage
    const random = yield* SecureRandom
    const names = wanted.map((label) => label.name)
    const found = new Map((yield* storage.labels.findByNames(organizationId, names)).map((label) => [nameKey(label.name), label.uuid]))
    for (const { name, color } of wanted) {
      if (found.has(nameKey(name))) continue
      const uuid = (yield* random.uuid()) as LabelId
      const outcome = yield* storage.labels.create(organizationId, { uuid, name, color, now }, labelLimit)
      if (outcome._tag === "Created") found.set(nameKey(name), uuid)
    }
    return names.map((name) => found.get(nameKey(name)))
  })

/** Runs `use` with a progress bar on stderr (drawn only on a terminal), stopped whatever happens. */
const withProgressBar = <A, E, R>(total: number, use: (advance: (count: number) => void) => Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const bar = new SingleBar(
        { format: "seeding [{bar}] {percentage}% | {value}/{total} contacts | {duration_formatted} (eta {eta_formatted})", stream: process.stderr, hideCursor: true },
        Presets.shades_classic
      )
      bar.start(total, 0)
      return bar
    }),
    (bar) => use((count) => bar.increment(count)),
    (bar) => Effect.sync(() => bar.stop())
  )
