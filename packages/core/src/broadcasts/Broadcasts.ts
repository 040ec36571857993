import { Clock, Context, Effect, Layer, Option } from "effect"
import type { ChannelId } from "../model/channels.js"
import type { ChatCursorPagination, ChatId } from "../model/chats.js"
import { encodeCursor, cursorPage, recordListCursorBinding } from "../common/cursor.js"
import { readCursorPageParams } from "../common/listParams.js"
import { type InputIssue, InvalidInput, RecordNotFound } from "../model/commonErrors.js"
import type { Contact, ContactId } from "../model/contacts.js"
import { DispatchWake } from "../dispatch/DispatchWake.js"
import { makeIdleBackoff, makeWakeLatch, sleepUntilDueMs } from "../dispatch/LeasedQueue.js"
import type { GroupId } from "../model/groups.js"
import { nowIso, readSendAt } from "../internal/time.js"
import { IssueCollector, isRecord, UUID_PATTERN } from "../internal/validation.js"
import type { LabelId } from "../model/labels.js"
import { BROADCAST_CANCELLED_FAILURE, MessageStatus, type MessageFailure, type MessageId } from "../model/messages.js"
import { templatePreview } from "../messaging/Messaging.js"
import { readTemplateShape } from "../messaging/readSend.js"
import { MessageTransport, transportKindOf } from "../messaging/MessageTransport.js"
import { SendQueueSettings } from "../messaging/SendQueue.js"
import type { OrganizationId } from "../model/organizations.js"
import { SecureRandom } from "../random/SecureRandom.js"
import type { StorageError } from "../storage/errors.js"
import type { BroadcastRecipientWrite, BroadcastStart } from "../storage/BroadcastRepository.js"
import type { NewMessage } from "../storage/ChatRepository.js"
import { Storage, type StorageService } from "../storage/Storage.js"
import type { TemplateNotApproved, TemplateNotFound, TemplateParametersMismatch, TemplateUnsupported } from "../model/templateErrors.js"
import type { Template, TemplateSendObject } from "../model/templates.js"
import { checkSendComponents } from "../templates/sendCheck.js"
import { Templates } from "../templates/Templates.js"
import { AudienceTooLarge, BroadcastNotCancellable, EmptyAudience } from "../model/broadcastErrors.js"
import {
  type Broadcast,
  type BroadcastAudience,
  type BroadcastId,
  type BroadcastInput,
  type BroadcastRecipient,
  BROADCAST_START_BATCH,
  MAX_BROADCAST_AUDIENCE
} from "../model/broadcasts.js"
import { fillPlaceholders, placeholderIssues } from "./placeholders.js"
import { TEMPLATE_NOT_APPROVED_STOP, TEMPLATE_UNSUPPORTED_STOP } from "../templates/broadcastStops.js"

/**
 * One page of broadcasts (`GET /broadcasts`), newest first.
 *
 * @category models
 */
export interface BroadcastList {
  readonly broadcasts: ReadonlyArray<Broadcast>
  readonly pagination: ChatCursorPagination
}

/**
 * One page of a broadcast's recipients (`GET /broadcasts/{uuid}/recipients`), in contact
 * uuid order.
 *
 * @category models
 */
export interface BroadcastRecipientList {
  readonly recipients: ReadonlyArray<BroadcastRecipient>
  readonly pagination: ChatCursorPagination
}

/**
 * Options of {@link BroadcastsService.create}: `broadcastUuid`, the uuid the broadcast gets
 * (an Idempotency-Key's claim chose it); when the organization already has a broadcast
 * with it, that broadcast is answered as it now stands and nothing is written.
 *
 * @category models
 */
export interface BroadcastCreateOptions {
  readonly broadcastUuid?: BroadcastId
}

/**
 * What creating a broadcast fails with: a bad input, the template's checks of
 * `POST /send/template`, an audience or channel uuid the organization does not have
 * (`RecordNotFound`, each named), an empty or too large audience, or the store.
 *
 * @category services
 */
export type BroadcastCreateError =
  | InvalidInput
  | TemplateNotFound
  | TemplateNotApproved
  | TemplateUnsupported
  | TemplateParametersMismatch
  | RecordNotFound
  | EmptyAudience
  | AudienceTooLarge
  | StorageError

/**
 * Broadcasts of an organization (docs/broadcasts.md): one approved template to an
 * audience, each recipient a message of the send queue.
 *
 * @category services
 */
export interface BroadcastsService {
  /**
   * `POST /broadcasts`: checks `name` (1–255 characters), the template as
   * `POST /send/template` does (its parameters' placeholders may name only
   * `contact.first_name`, `contact.last_name`, `contact.phone`, `contact.email`:
   * `invalid_placeholder`), the audience's uuids (at most 1 000 of each kind; unknown ones
   * → `RecordNotFound`), `channel_uuid` (else the organization's default channel) and
   * `send_at` (ISO 8601 with an offset). Its `transport` is the transport's kind for a
   * message through that channel (`transportKindOf`). Then counts the audience: 0 → `EmptyAudience`, over
   * {@link MAX_BROADCAST_AUDIENCE} → `AudienceTooLarge`. Creates it `scheduled` when
   * `send_at` is in the future, else `sending`; its recipients are written by the starter
   * ({@link startDueBroadcasts}). Nothing is written on any failure.
   */
  readonly create: (
    organizationId: OrganizationId,
    input: BroadcastInput,
    options?: BroadcastCreateOptions
  ) => Effect.Effect<Broadcast, BroadcastCreateError>
  /** One broadcast with its counts; `RecordNotFound` when the organization has none with this uuid. */
  readonly get: (organizationId: OrganizationId, id: BroadcastId) => Effect.Effect<Broadcast, RecordNotFound | StorageError>
  /** `GET /broadcasts?limit=&cursor=`: newest first; `limit` 1–100 (default 20). */
  readonly list: (
    organizationId: OrganizationId,
    params: { readonly limit?: unknown; readonly cursor?: unknown }
  ) => Effect.Effect<BroadcastList, InvalidInput | StorageError>
  /**
   * `GET /broadcasts/{uuid}/recipients?status=&limit=&cursor=`: in contact-uuid order, only
   * those whose message has `status` when given (a message status).
   */
  readonly recipients: (
    organizationId: OrganizationId,
    id: BroadcastId,
    params: { readonly status?: unknown; readonly limit?: unknown; readonly cursor?: unknown }
  ) => Effect.Effect<BroadcastRecipientList, InvalidInput | RecordNotFound | StorageError>
  /**
   * `POST /broadcasts/{uuid}/cancel`: a `scheduled` or `sending` broadcast becomes
   * `cancelled` and its `queued` recipients fail with `cancelled`; one that already ended →
   * `BroadcastNotCancellable`.
   */
  readonly cancel: (
    organizationId: OrganizationId,
    id: BroadcastId
  ) => Effect.Effect<Broadcast, RecordNotFound | BroadcastNotCancellable | StorageError>
}

/**
 * Tag of the {@link BroadcastsService}; `Broadcasts.layer` needs `Storage`, `SecureRandom`,
 * `Templates` and `MessageTransport` (whose `kind` settles a broadcast's `transport`).
 *
 * @category services
 */
export class Broadcasts extends Context.Tag("@switchboard/core/Broadcasts")<Broadcasts, BroadcastsService>() {
  static readonly layer: Layer.Layer<Broadcasts, never, Storage | SecureRandom | Templates | MessageTransport> = Layer.effect(
    Broadcasts,
    Effect.suspend(() => make)
  )
}

/** The most uuids of one kind an audience may name. */
const MAX_AUDIENCE_UUIDS = 1_000

const make = Effect.gen(function*() {
  const storage = yield* Storage
  const random = yield* SecureRandom
  const templates = yield* Templates
  const transport = yield* MessageTransport

  const notFound = (id: string) => new RecordNotFound({ missing: [{ resource: "broadcast", uuid: id }] })

  const get = Effect.fnUntraced(function*(organizationId: OrganizationId, id: BroadcastId) {
    const found = yield* storage.broadcasts.findById(organizationId, id)
    if (Option.isNone(found)) return yield* notFound(id)
    return found.value
  })

  const create = Effect.fnUntraced(function*(
    organizationId: OrganizationId,
    input: BroadcastInput,
    options?: BroadcastCreateOptions
  ) {
    const collector = new IssueCollector()
    const body = isRecord(input) ? input : {}
    const name = collector.requiredText("name", body.name)
    const shape = readTemplateShape(collector, body.template)
    const audience = readAudience(collector, body.audience)
    const requestedChannel = collector.optionalUuid("channel_uuid", body.channel_uuid)
    const sendAt = readSendAt(collector, body.send_at)
    if (shape !== null) for (const issue of placeholderIssues(shape.components)) collector.issues.push(issue)
    if (collector.issues.length > 0) return yield* new InvalidInput({ issues: collector.issues })
    if (options?.broadcastUuid !== undefined) {
      // A takeover of an Idempotency-Key whose first attempt created the broadcast: answer it.
      const created = yield* storage.broadcasts.findById(organizationId, options.broadcastUuid)
      if (Option.isSome(created)) return created.value
    }
    const channel = yield* chooseChannel(storage, organizationId, requestedChannel)
    // The template of the channel's WhatsApp Business Account, else one with no account.
    const resolved = yield* templates.resolveForSend(organizationId, shape!, channel?.waba_id ?? null)
    // Settled now, from the channel, for the broadcast and each of its recipients' messages.
    const transportKind = transportKindOf(transport, { channel: channel === null ? null : { uuid: channel.uuid } })
    yield* requireAudience(storage, organizationId, audience)
    const size = yield* storage.broadcasts.countAudience(organizationId, audience)
    if (size === 0) return yield* new EmptyAudience()
    if (size > MAX_BROADCAST_AUDIENCE) return yield* new AudienceTooLarge({ size, limit: MAX_BROADCAST_AUDIENCE })
    const nowMs = yield* Clock.currentTimeMillis
    const scheduled = sendAt !== null && sendAt > nowMs
    return yield* storage.broadcasts.create(organizationId, {
      uuid: options?.broadcastUuid ?? ((yield* random.uuid()) as BroadcastId),
      name,
      status: scheduled ? "scheduled" : "sending",
      // The components as given (placeholders kept), in the shape the template check normalised.
      template: { name: resolved.send.name, language: resolved.send.language, components: (shape!.components ?? []) as TemplateSendObject["components"] },
      audience,
      channel_uuid: channel?.uuid ?? null,
      transport: transportKind,
      send_at: sendAt === null ? null : new Date(sendAt).toISOString(),
      now: new Date(nowMs).toISOString()
    })
  })

  const list = Effect.fnUntraced(function*(organizationId: OrganizationId, params: { readonly limit?: unknown; readonly cursor?: unknown }) {
    const binding = recordListCursorBinding(organizationId, "broadcasts", organizationId)
    const read = readCursorPageParams<BroadcastId>(params, binding, "cursor is not valid here: use the next_cursor of a page of broadcasts")
    if ("issues" in read) return yield* new InvalidInput({ issues: read.issues })
    const { limit, after } = read.query
    const rows = yield* storage.broadcasts.list(organizationId, {
      limit: limit + 1,
      after: after === null ? null : { created_at: after.value, uuid: after.uuid }
    })
    const page = cursorPage(rows, limit, (last) => encodeCursor(binding, { value: last.created_at, uuid: last.uuid }))
    const result: BroadcastList = { broadcasts: page.items, pagination: page.pagination }
    return result
  })

  const recipients = Effect.fnUntraced(function*(
    organizationId: OrganizationId,
    id: BroadcastId,
    params: { readonly status?: unknown; readonly limit?: unknown; readonly cursor?: unknown }
  ) {
    const status = params.status === undefined ? null : params.status
    const statusIssues: Array<InputIssue> = []
    if (status !== null && !(MessageStatus.literals as ReadonlyArray<unknown>).includes(status)) {
      statusIssues.push({ code: "invalid_format", field: "status", message: `status must be one of ${MessageStatus.literals.join(", ")}` })
    }
    const binding = recordListCursorBinding(organizationId, `broadcast_recipients ${String(status)}`, id)
    const read = readCursorPageParams<ContactId>(
      params,
      binding,
      "cursor is not valid here: use the next_cursor of a page of this broadcast's recipients with the same status"
    )
    const issues = [...statusIssues, ...("issues" in read ? read.issues : [])]
    if (issues.length > 0 || "issues" in read) return yield* new InvalidInput({ issues })
    yield* get(organizationId, id)
    const { limit, after } = read.query
    const rows = yield* storage.broadcasts.recipients(organizationId, id, {
      status: status as MessageStatus | null,
      limit: limit + 1,
      after: after === null ? null : after.uuid
    })
    const page = cursorPage(rows, limit, (last) => encodeCursor(binding, { value: "", uuid: last.contact_uuid }))
    const result: BroadcastRecipientList = { recipients: page.items, pagination: page.pagination }
    return result
  })

  const cancel = Effect.fnUntraced(function*(organizationId: OrganizationId, id: BroadcastId) {
    const outcome = yield* storage.broadcasts.cancel(organizationId, id, BROADCAST_CANCELLED_FAILURE, yield* nowIso)
    switch (outcome._tag) {
      case "NotFound":
        return yield* notFound(id)
      case "Refused":
        return yield* new BroadcastNotCancellable({ broadcast_uuid: id, status: outcome.broadcast.status })
      case "Done":
        return outcome.broadcast
    }
  })

  const service: BroadcastsService = { create, get, list, recipients, cancel }
  return service
})

/** The audience object: three lists of uuids, at least one of them non-empty. */
const readAudience = (collector: IssueCollector, value: unknown): BroadcastAudience => {
  const audience = isRecord(value) ? value : {}
  if (!isRecord(value)) collector.add("required", "audience", "audience is required: {group_uuids?, label_uuids?, contact_uuids?}")
  const list = <Id extends string>(field: "group_uuids" | "label_uuids" | "contact_uuids"): ReadonlyArray<Id> => {
    const given = audience[field]
    if (given === undefined || given === null) return []
    const path = `audience.${field}`
    if (!Array.isArray(given)) {
      collector.add("invalid_type", path, `${path} must be an array of uuids`)
      return []
    }
    if (given.length > MAX_AUDIENCE_UUIDS) {
      collector.add("too_long", path, `${path} may name at most ${MAX_AUDIENCE_UUIDS} uuids`)
      return []
    }
    const uuids = new Set<Id>()
    given.forEach((item: unknown, index) => {
      if (typeof item === "string" && UUID_PATTERN.test(item)) uuids.add(item.toLowerCase() as Id)
      else collector.add("invalid_format", `${path}[${index}]`, `${path}[${index}] must be a uuid`)
    })
    return [...uuids]
  }
  const result: BroadcastAudience = {
    group_uuids: list<GroupId>("group_uuids"),
    label_uuids: list<LabelId>("label_uuids"),
    contact_uuids: list<ContactId>("contact_uuids")
  }
  if (isRecord(value) && collector.issues.every((issue) => !issue.field?.startsWith("audience"))) {
    if (result.group_uuids.length + result.label_uuids.length + result.contact_uuids.length === 0) {
      collector.add("required", "audience", "audience must name at least one group, label or contact")
    }
  }
  return result
}

/**
 * The broadcast's channel (its uuid and WhatsApp Business Account): the requested one
 * (else `RecordNotFound`), else the organization's default, else `null`.
 */
const chooseChannel = (storage: StorageService, organizationId: OrganizationId, requested: string | null) =>
  Effect.gen(function*() {
    if (requested === null) {
      const [first] = yield* storage.channels.list(organizationId)
      return first === undefined ? null : { uuid: first.uuid, waba_id: first.waba_id }
    }
    const found = yield* storage.channels.findById(organizationId, requested as ChannelId)
    if (Option.isNone(found)) {
      return yield* new RecordNotFound({ missing: [{ resource: "channel", uuid: requested, field: "channel_uuid" }] })
    }
    return { uuid: found.value.channel.uuid, waba_id: found.value.channel.waba_id }
  })

/** Every uuid of the audience must be one of the organization's: else `RecordNotFound` naming each. */
const requireAudience = (storage: StorageService, organizationId: OrganizationId, audience: BroadcastAudience) =>
  Effect.gen(function*() {
    const missing: Array<RecordNotFound["missing"][number]> = []
    const check = <Id extends string>(
      ids: ReadonlyArray<Id>,
      resource: "group" | "label" | "contact",
      field: string,
      find: (id: Id) => Effect.Effect<Option.Option<unknown>, StorageError>
    ) =>
      Effect.forEach(ids, (id, index) =>
        Effect.map(find(id), (found) => {
          if (Option.isNone(found)) missing.push({ resource, uuid: id, field: `audience.${field}[${index}]` })
        }), { discard: true })
    yield* check(audience.group_uuids, "group", "group_uuids", (id) => storage.groups.findById(organizationId, id))
    yield* check(audience.label_uuids, "label", "label_uuids", (id) => storage.labels.findById(organizationId, id))
    yield* check(audience.contact_uuids, "contact", "contact_uuids", (id) => storage.contacts.findById(organizationId, id))
    if (missing.length > 0) return yield* new RecordNotFound({ missing })
  })

// ---------------------------------------------------------------------------------------
// The starter (docs/broadcasts.md "How a broadcast starts")

/** How long a starter holds a broadcast's start between two batches, in ms. */
export const BROADCAST_START_LEASE_MS = 30_000

/** The `failure` of a recipient skipped because the contact opted out of marketing messages. */
export const OPTED_OUT_FAILURE: MessageFailure = {
  code: "opted_out",
  title: "The contact opted out of marketing messages"
}

/** Why a broadcast stops when its start finds it cannot go on. */
const stopReason = (code: string, title: string): MessageFailure => ({ code, title })

/**
 * Starts every broadcast whose start is due, one after another: claims it
 * (`BroadcastRepository.claimStart`), writes its recipients in batches of
 * {@link BROADCAST_START_BATCH} (one atomic step each, yielding between them), then
 * completes the broadcasts none of whose recipients waits any more. The number of
 * broadcasts whose start it ran. Never fails but with the store's error.
 *
 * @category dispatch
 */
export const startDueBroadcasts: Effect.Effect<number, StorageError, Storage | SecureRandom> = Effect.gen(function*() {
  const storage = yield* Storage
  const random = yield* SecureRandom
  let started = 0
  for (;;) {
    const now = yield* Clock.currentTimeMillis
    const lease = yield* random.uuid()
    const claimed = yield* storage.broadcasts.claimStart({ now, lease, leaseUntil: now + BROADCAST_START_LEASE_MS })
    if (Option.isNone(claimed)) break
    started++
    yield* writeStart(claimed.value).pipe(
      Effect.catchAllCause((cause) =>
        Effect.logWarning("Broadcast start failed; it resumes when its lease ends", cause).pipe(
          Effect.annotateLogs({ broadcast_id: claimed.value.broadcast.uuid })
        )
      )
    )
  }
  yield* storage.broadcasts.completeFinished(yield* nowIso)
  return started
})

/** Writes a claimed start's recipients, batch after batch, until its audience ends or the start is lost. */
const writeStart = (start: BroadcastStart) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const random = yield* SecureRandom
    const settings = yield* SendQueueSettings
    const { broadcast, organization_id: organizationId, lease } = start
    const stop = (reason: MessageFailure) =>
      Effect.flatMap(nowIso, (now) => storage.broadcasts.stop(organizationId, broadcast.uuid, reason, now))
    let throughput: number | null = null
    let wabaId: string | null = null
    if (broadcast.channel_uuid !== null) {
      const channel = yield* storage.channels.findById(organizationId, broadcast.channel_uuid)
      if (Option.isNone(channel)) return yield* stop(stopReason("channel_removed", "The broadcast's channel was removed"))
      throughput = channel.value.channel.throughput_mps
      wabaId = channel.value.channel.waba_id
    }
    // The template of the channel's WhatsApp Business Account, else one with no account.
    const template = yield* storage.templates.findByIdentity(organizationId, broadcast.template.name, broadcast.template.language.code, wabaId)
    if (Option.isNone(template) || template.value.status !== "APPROVED") return yield* stop(TEMPLATE_NOT_APPROVED_STOP)
    if (template.value.problems.length > 0) return yield* stop(TEMPLATE_UNSUPPORTED_STOP)
    const total = yield* storage.broadcasts.countAudience(organizationId, broadcast.audience)
    // claimStart sets started_at; the clock stands in only for a store that did not.
    const startedAt = broadcast.started_at === null ? yield* Clock.currentTimeMillis : Date.parse(broadcast.started_at)
    const expiresAt = new Date(startedAt + recipientLifetimeMs(settings.ttlMs, total, throughput)).toISOString()
    let cursor = start.cursor
    for (;;) {
      const contacts = yield* storage.broadcasts.audiencePage(organizationId, broadcast.audience, cursor, BROADCAST_START_BATCH)
      const finished = contacts.length < BROADCAST_START_BATCH
      const ids = yield* random.uuids(contacts.length * 2)
      const now = yield* Clock.currentTimeMillis
      const nowText = new Date(now).toISOString()
      const recipients = contacts.map((contact, index) =>
        recipientOf(broadcast, template.value, contact, ids[index * 2]! as MessageId, ids[index * 2 + 1]! as ChatId, expiresAt, nowText)
      )
      const last = contacts[contacts.length - 1]
      if (last !== undefined) cursor = last.uuid
      const written = yield* storage.broadcasts.writeRecipients(organizationId, broadcast.uuid, lease, {
        recipients,
        cursor,
        finished,
        leaseUntil: now + BROADCAST_START_LEASE_MS,
        now: nowText
      })
      // Not written: cancelled or stopped meanwhile, or the lease passed to another starter.
      if (!written || finished) return
      yield* yieldToEventLoop
    }
  })

/**
 * Lets the host's event loop run (I/O, timers) before the next batch. `Effect.yieldNow()`
 * is not enough: Effect's scheduler resumes a yielded fiber in a microtask (up to 2 048
 * times in a row before it uses a timer), and the store's writes are synchronous, so a
 * start of 20 000 recipients held the event loop for ~7 s: no request was read, no message
 * handed to Meta, and keep-alive connections idle past their timeout were reset.
 */
const yieldToEventLoop: Effect.Effect<void> = Effect.async<void>((resume) => {
  const schedule = typeof setImmediate === "function" ? setImmediate : (callback: () => void) => setTimeout(callback, 0)
  const cancel = typeof clearImmediate === "function" ? clearImmediate : clearTimeout
  const handle = schedule(() => resume(Effect.void))
  return Effect.sync(() => cancel(handle as never))
})

/**
 * How long a broadcast's recipients may wait, in ms from its `started_at`: the larger of
 * the send queue's time to live (`ttlMs`) and twice the time its `total` recipients need at
 * the channel's `throughput_mps` (2 × total ÷ throughput_mps seconds; just the TTL without
 * a channel). docs/broadcasts.md "Pacing".
 *
 * @category dispatch
 */
export const recipientLifetimeMs = (ttlMs: number, total: number, throughputMps: number | null): number =>
  Math.max(ttlMs, throughputMps === null ? 0 : (2 * total * 1000) / throughputMps)

/** One recipient of a batch: its message `queued`, or `failed` when skipped (opted out, a placeholder without a value, a filled parameter too long). */
const recipientOf = (
  broadcast: Broadcast,
  template: Template,
  contact: Contact,
  messageId: MessageId,
  chatId: ChatId,
  expiresAt: string,
  now: string
): BroadcastRecipientWrite => {
  const recipient = (message: NewMessage): BroadcastRecipientWrite => ({
    contact_uuid: contact.uuid,
    chat_uuid: chatId,
    message,
    to: contact.phone,
    expires_at: expiresAt
  })
  const skipped = (failure: MessageFailure) =>
    recipient(recipientMessage(broadcast, messageId, now, { template: broadcast.template, text: null, status: "failed", failure }))
  if (template.category === "MARKETING" && contact.marketing_opt_out_at !== null) return skipped(OPTED_OUT_FAILURE)
  const filled = fillPlaceholders(broadcast.template.components, contact)
  if ("missing" in filled) {
    return skipped({ code: "missing_parameter", title: `The contact has no ${filled.missing.replace("_", " ")} and its placeholder no fallback` })
  }
  const check = checkSendComponents(template, filled.components)
  const [issue] = check.issues
  if (issue !== undefined) return skipped({ code: "invalid_parameter", title: issue.message })
  return recipient(
    recipientMessage(broadcast, messageId, now, {
      template: { name: template.name, language: { code: template.language }, components: check.components },
      text: templatePreview(check.text),
      status: "queued",
      failure: null
    })
  )
}

/**
 * A recipient's message: outbound, type `template`, the broadcast's channel, transport
 * and uuid, created at `now`, with the given template, text, status and failure. Every
 * field is written in this one object literal on purpose: built as a spread of shared
 * fields plus these four (`{ ...base, template, … }`), each message got a hidden class of
 * its own on Node 20's V8 (a spread followed by added keys), ~2 KB per recipient that
 * survived young-generation collections and filled old space during a start
 * (docs/benchmarks.md "Broadcasts").
 */
const recipientMessage = (
  broadcast: Broadcast,
  uuid: MessageId,
  now: string,
  fields: Pick<NewMessage, "template" | "text" | "status" | "failure">
): NewMessage => ({
  uuid,
  direction: "outbound",
  type: "template",
  media: null,
  content: null,
  provider_message_id: null,
  channel_uuid: broadcast.channel_uuid,
  transport: broadcast.transport,
  attempts: 0,
  next_attempt_at: null,
  broadcast_uuid: broadcast.uuid,
  reply_to: null,
  reactions: [],
  created_at: now,
  updated_at: now,
  template: fields.template,
  text: fields.text,
  status: fields.status,
  failure: fields.failure
})

/**
 * Options of {@link runBroadcastStarter}: `pollIntervalMs`, the longest sleep between two
 * passes (ms, default 1 000): how soon the loop finds a start it was not told of (a
 * broadcast another process created after this loop's last pass); a start it knows of
 * (`BroadcastRepository.nextStartDueAt`) ends the sleep when it is due.
 *
 * @category dispatch
 */
export interface BroadcastStarterOptions {
  readonly pollIntervalMs?: number
}

/**
 * The broadcasts' loop (docs/broadcasts.md "How a broadcast starts"): {@link startDueBroadcasts},
 * then a sleep until the earliest of the next due start (`BroadcastRepository.nextStartDueAt`,
 * read after each pass: a scheduled broadcast starts at its `send_at`, a start whose holder
 * died when its lease ends), `pollIntervalMs`, and a wake of the process's
 * {@link DispatchWake} (a broadcast created, a recipient settled); after
 * `IDLE_PASSES_BEFORE_BACKOFF` passes in a row with no start due and no wake, the poll
 * interval becomes `IDLE_POLL_INTERVAL_MS` until a wake or a due start (dispatch/LeasedQueue.ts
 * `makeIdleBackoff`). Two passes begin at least
 * 200 ms apart, also when a start is already due (no busy loop). Runs until interrupted;
 * a failed pass is logged and the next one runs after `pollIntervalMs` (or a wake), as
 * after a failed read of the next due start.
 *
 * @category dispatch
 */
export const runBroadcastStarter = (
  options: BroadcastStarterOptions = {}
): Effect.Effect<never, never, Storage | SecureRandom | SendQueueSettings | DispatchWake> =>
  Effect.scoped(
    Effect.gen(function*() {
      const storage = yield* Storage
      const wake = yield* DispatchWake
      const backoff = makeIdleBackoff(options.pollIntervalMs ?? 1_000)
      // A wake during a pass is kept (one), so the next sleep ends at once.
      const mailbox = yield* makeWakeLatch
      const unsubscribe = wake.subscribe(mailbox.poke)
      yield* Effect.addFinalizer(() => Effect.sync(unsubscribe))
      for (;;) {
        const passStartedAt = yield* Clock.currentTimeMillis
        const passed = yield* startDueBroadcasts.pipe(
          Effect.as(true),
          Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("Broadcast pass failed", cause), false))
        )
        // After a failed pass, the poll interval: a start it could not claim would stay due,
        // and a pass (and its warning) would follow every MIN_PASS_GAP_MS.
        const dueAt = passed ? yield* Effect.orElseSucceed(storage.broadcasts.nextStartDueAt(), () => null) : null
        const now = yield* Clock.currentTimeMillis
        if (dueAt === null) backoff.idle()
        else backoff.busy()
        const until = now + sleepUntilDueMs(now, backoff.pollMs(), dueAt)
        // A timer may fire a little before its time by the clock (Node's timers count from
        // the event loop's cached time): sleep the rest, else the pass finds nothing due
        // and the start waits MIN_PASS_GAP_MS more.
        for (let left = until - now; ;) {
          if (yield* mailbox.sleepUntilWoken(left)) {
            // A wake starts the idle count again.
            backoff.busy()
            break
          }
          left = until - (yield* Clock.currentTimeMillis)
          if (left <= 0) break
        }
        // Woken by every settled message while a broadcast sends: at most one pass per MIN_PASS_GAP_MS.
        const gap = MIN_PASS_GAP_MS - ((yield* Clock.currentTimeMillis) - passStartedAt)
        if (gap > 0) yield* Effect.sleep(gap)
      }
    })
  )

/** The least time between two passes of the broadcasts' loop, in ms. */
const MIN_PASS_GAP_MS = 200
