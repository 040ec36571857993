import { Effect } from "effect"
import type { Message, MessageFailure } from "../model/messages.js"
import type { BroadcastId } from "../model/broadcasts.js"
import type { OrganizationId } from "../model/organizations.js"
import type { StorageError } from "../storage/errors.js"
import type { StorageService } from "../storage/Storage.js"

/**
 * Meta's codes that stop a broadcast (docs/broadcasts.md "What stops a broadcast"): its
 * template missing at Meta in that language (132001), paused (132015) or disabled
 * (132016), or its channel's number limited for spam (131048).
 *
 * @category broadcasts
 */
export const BROADCAST_STOPPING_CODES: ReadonlyArray<string> = ["132001", "132015", "132016", "131048"]

/**
 * Meta's code for a recipient who stopped marketing messages (docs/broadcasts.md "Opt-outs").
 *
 * @category broadcasts
 */
export const MARKETING_OPT_OUT_CODE = "131050"

/**
 * What an outbound message's failure changes beyond the message, whether Meta answered it
 * to the send or reported it in a `failed` status notification: 131050 marks the contact
 * opted out of marketing (`marketing_opt_out_at`); a code of
 * {@link BROADCAST_STOPPING_CODES} on a broadcast's recipient stops that broadcast, its
 * waiting recipients failing with the same failure. `now` is ISO 8601.
 *
 * @category broadcasts
 */
export const reactToOutboundFailure = (
  storage: StorageService,
  organizationId: OrganizationId,
  message: Message,
  failure: MessageFailure,
  now: string
): Effect.Effect<void, StorageError> =>
  Effect.gen(function*() {
    if (failure.code === MARKETING_OPT_OUT_CODE) {
      yield* storage.contacts.markMarketingOptOut(organizationId, message.contact_uuid, now)
    }
    if (message.broadcast_uuid !== null && BROADCAST_STOPPING_CODES.includes(failure.code)) {
      yield* storage.broadcasts.stop(organizationId, message.broadcast_uuid as BroadcastId, failure, now)
    }
  })
