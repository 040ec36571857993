import { Effect, Option } from "effect"
import type { Broadcast } from "../model/broadcasts.js"
import type { MessageFailure } from "../model/messages.js"
import { nameKey } from "../model/names.js"
import type { OrganizationId } from "../model/organizations.js"
import type { Template } from "../model/templates.js"
import type { StorageError } from "../storage/errors.js"
import type { StorageService } from "../storage/Storage.js"

/**
 * The `stopped_reason` of a broadcast whose template is no longer `APPROVED`
 * (docs/broadcasts.md "What stops a broadcast").
 *
 * @category broadcasts
 */
export const TEMPLATE_NOT_APPROVED_STOP: MessageFailure = {
  code: "template_not_approved",
  title: "The broadcast's template is no longer approved"
}

/**
 * The `stopped_reason` of a broadcast whose template, when its start came, had parts
 * Switchboard cannot send (its `problems`: docs/broadcasts.md "What stops a broadcast").
 *
 * @category broadcasts
 */
export const TEMPLATE_UNSUPPORTED_STOP: MessageFailure = {
  code: "template_unsupported",
  title: "The broadcast's template has parts Switchboard cannot send"
}

/**
 * The WhatsApp Business Account whose templates a broadcast sends: its channel's, `null`
 * when it has none (or the channel was removed).
 */
const accountOf = (storage: StorageService, organizationId: OrganizationId, broadcast: Broadcast) =>
  broadcast.channel_uuid === null
    ? Effect.succeed(null)
    : Effect.map(storage.channels.findById(organizationId, broadcast.channel_uuid), (found) =>
      Option.match(found, { onNone: () => null, onSome: (stored) => stored.channel.waba_id })
    )

/**
 * Stops every `sending` broadcast of the organization that sends `template` (same name
 * and language, and the template its channel's account resolves to:
 * `TemplateRepository.findByIdentity`) with {@link TEMPLATE_NOT_APPROVED_STOP}, when
 * `template` is not `APPROVED` (any move of a template away from `APPROVED`: a webhook, a
 * sync, a delete). Its waiting recipients fail with that reason (`BroadcastRepository.stop`).
 * Returns the broadcasts stopped. `now` is ISO 8601.
 *
 * @category broadcasts
 */
export const stopBroadcastsOfTemplate = (
  storage: StorageService,
  organizationId: OrganizationId,
  template: Template,
  now: string
): Effect.Effect<ReadonlyArray<Broadcast>, StorageError> =>
  Effect.gen(function*() {
    if (template.status === "APPROVED") return []
    const stopped: Array<Broadcast> = []
    for (const broadcast of yield* storage.broadcasts.sending(organizationId)) {
      const { name, language } = broadcast.template
      if (nameKey(name) !== nameKey(template.name) || language.code !== template.language) continue
      const wabaId = yield* accountOf(storage, organizationId, broadcast)
      const resolved = yield* storage.templates.findByIdentity(organizationId, name, language.code, wabaId)
      // Its channel's account sends another template of that name: not this one's broadcast.
      if (Option.isSome(resolved) && resolved.value.uuid !== template.uuid) continue
      const done = yield* storage.broadcasts.stop(organizationId, broadcast.uuid, TEMPLATE_NOT_APPROVED_STOP, now)
      if (Option.isSome(done)) stopped.push(done.value)
    }
    return stopped
  })
