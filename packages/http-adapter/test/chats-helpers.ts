import { Effect, type Layer, TestClock, TestContext } from "effect"
import { type Chat, Chats, type ChatsService, Core, type InboundMessageInput, type OrganizationId, type Storage } from "@switchboard/core"
import type { ApiClient } from "./helpers.js"

/** 2026-03-01T00:00:00Z: the Clock's time, plus `minutes`, when a test message arrives. */
export const BASE_TIME = Date.UTC(2026, 2, 1)

/** The ISO instant `minutes` after {@link BASE_TIME}. */
export const at = (minutes: number): string => new Date(BASE_TIME + minutes * 60_000).toISOString()

/**
 * Runs `use` with the core Chats service on `storage` (the store the handler under test
 * serves), with a TestClock set to `minutes` after {@link BASE_TIME}: there is no HTTP
 * route that writes chats, so tests make them as a dashboard or a webhook would.
 */
export const withChats = <A, E>(
  storage: Layer.Layer<Storage>,
  minutes: number,
  use: (chats: ChatsService) => Effect.Effect<A, E>
): Promise<A> =>
  Effect.runPromise(
    Effect.gen(function* () {
      yield* TestClock.setTime(BASE_TIME + minutes * 60_000)
      return yield* use(yield* Chats)
    }).pipe(Effect.provide(Core.layer), Effect.provide(storage), Effect.provide(TestContext.TestContext))
  )

/** An inbound text message from `phone` at `minutes`; returns the chat after it. */
export const receive = (
  storage: Layer.Layer<Storage>,
  organizationId: OrganizationId,
  phone: string,
  minutes: number,
  extra: Partial<InboundMessageInput> = {}
): Promise<Chat> =>
  withChats(storage, minutes, (chats) =>
    Effect.map(chats.receiveInbound(organizationId, { phone, type: "text", text: "hello", ...extra }), (receipt) => receipt.chat)
  )

/** The uuids of `GET /chats?<query>`, which must answer 200. */
export const listedUuids = async (api: ApiClient, query: string): Promise<Array<string>> => {
  const result = await api.get(`/chats${query === "" ? "" : `?${query}`}`)
  if (result.status !== 200) throw new Error(`GET /chats?${query} answered ${result.status}: ${JSON.stringify(result.errors)}`)
  return (result.data.chats as Array<{ uuid: string }>).map((chat) => chat.uuid)
}

/** Every page of a cursor walk of `GET /chats?<query>&limit=<limit>`, in order. */
export const walkCursor = async (api: ApiClient, query: string, limit: number) => {
  const pages: Array<Array<string>> = []
  let cursor: string | null = null
  for (let guard = 0; guard < 1000; guard++) {
    const params = new URLSearchParams(query)
    params.set("limit", String(limit))
    if (cursor !== null) params.set("cursor", cursor)
    const result = await api.get(`/chats?${params}`)
    if (result.status !== 200) throw new Error(`cursor page answered ${result.status}: ${JSON.stringify(result.errors)}`)
    pages.push((result.data.chats as Array<{ uuid: string }>).map((chat) => chat.uuid))
    const pagination = result.data.pagination as { mode: string; limit: number; next_cursor: string | null; has_more: boolean }
    if (pagination.mode !== "cursor" || pagination.limit !== limit) throw new Error(`bad pagination ${JSON.stringify(pagination)}`)
    if (pagination.has_more !== (pagination.next_cursor !== null)) throw new Error(`has_more disagrees: ${JSON.stringify(pagination)}`)
    cursor = pagination.next_cursor
    if (cursor === null) return pages
  }
  throw new Error("the cursor walk did not end")
}
