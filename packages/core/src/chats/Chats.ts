import { Context, Effect, Layer } from "effect"
import { SecureRandom } from "../random/SecureRandom.js"
import { Storage } from "../storage/Storage.js"
import { makeChatOperations } from "./chatOperations.js"
import type { ChatsService } from "./ChatsService.js"
import { makeMessageOperations } from "./messageOperations.js"

/**
 * Tag of the {@link ChatsService}; `Chats.layer` needs `Storage` and `SecureRandom`.
 *
 * @category services
 * @example
 * import { Effect } from "effect"
 * import { Chats } from "@switchboard/core"
 *
 * const inbound = (orgId: Parameters<Chats["Type"]["receiveInbound"]>[0]) =>
 *   Effect.flatMap(Chats, (chats) => chats.receiveInbound(orgId, { phone: "+14155550100", type: "text", text: "Hi" }))
 */
export class Chats extends Context.Tag("@switchboard/core/Chats")<Chats, ChatsService>() {
  static readonly layer: Layer.Layer<Chats, never, Storage | SecureRandom> = Layer.effect(
    Chats,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const storage = yield* Storage
  const random = yield* SecureRandom
  const service: ChatsService = { ...makeMessageOperations(storage, random), ...makeChatOperations(storage) }
  return service
})
