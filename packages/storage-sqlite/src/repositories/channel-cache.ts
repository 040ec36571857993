import type Sqlite from "better-sqlite3"
import { type Effect, Exit, Option } from "effect"
import type { OrganizationId, StorageError, StoredChannel } from "@switchboard/core"
import { endOfTurnQueue } from "../internal/endOfTurn.js"
import { attemptNow, type Statements } from "../internal/sql.js"
import { CHANNEL_COLUMNS, type ChannelRow, decodeChannel } from "./channel-rows.js"

// The exact cache of `channels.findByPhoneNumberId`: every WhatsApp notification looks its
// channel up by Meta's phone_number_id, and alone that look-up was a read transaction of its
// own before the notification's write one (docs/benchmarks.md "Ingest").

/** Most channels the cache holds before it starts over. */
const CHANNEL_CACHE_SIZE = 10_000

const FIND_BY_PHONE_NUMBER_ID = "channels.findByPhoneNumberId"

const SQL_FIND = `SELECT ${CHANNEL_COLUMNS} FROM channels WHERE phone_number_id = ?`

/** The channel cache of one connection, shared by every repository built on it. */
interface ChannelCache {
  readonly channels: Map<string, StoredChannel>
  /** Asks for a look-up, answered with the other look-ups of the same turn of the event loop. */
  readonly lookUp: (phoneNumberId: string) => Effect.Effect<Option.Option<StoredChannel>, StorageError>
}

const channelCaches = new WeakMap<Sqlite.Database, ChannelCache>()

/**
 * `findByPhoneNumberId` of the connection `db`, through its exact cache. Look-ups asked for
 * during one turn of the event loop are answered together at its end: one `PRAGMA
 * data_version` reading for the group, taken after every request of the group was read,
 * then each phone_number_id from the cache or by its `SELECT`. `data_version` changes when
 * another connection (another process: the admin CLI removing a channel) committed to the
 * file, and then the cache starts over; this connection's own writes to channels start it
 * over through {@link forgetChannels}. A phone_number_id no channel has is never cached. So a
 * channel added, changed, paused or removed is seen by the very next notification.
 */
export const findChannelByPhoneNumberId = (
  db: Sqlite.Database,
  statements: Statements
): ((phoneNumberId: string) => Effect.Effect<Option.Option<StoredChannel>, StorageError>) => {
  let cache = channelCaches.get(db)
  if (cache === undefined) {
    cache = makeChannelCache(db, statements)
    channelCaches.set(db, cache)
  }
  return cache.lookUp
}

/**
 * Empties the channel cache of `db`: call it after each of this connection's writes to a
 * column of `channels` that a {@link StoredChannel} holds (insert, update, delete, pause,
 * resume), which do not change `data_version`. Pacing columns are not in it.
 */
export const forgetChannels = (db: Sqlite.Database): void => {
  channelCaches.get(db)?.channels.clear()
}

const makeChannelCache = (db: Sqlite.Database, statements: Statements): ChannelCache => {
  const channels = new Map<string, StoredChannel>()
  const readDataVersion = db.prepare("PRAGMA data_version").pluck()
  let dataVersion: unknown
  const lookUpNow = (phoneNumberId: string): Exit.Exit<Option.Option<StoredChannel>, StorageError> =>
    attemptNow(FIND_BY_PHONE_NUMBER_ID, () => {
      const cached = channels.get(phoneNumberId)
      if (cached !== undefined) return Option.some(cached)
      const row = statements.prepare<ChannelRow>(SQL_FIND).get(phoneNumberId)
      if (row === undefined) return Option.none()
      const found = storedChannelOf(row)
      if (channels.size >= CHANNEL_CACHE_SIZE) channels.clear()
      channels.set(phoneNumberId, found)
      return Option.some(found)
    })
  const lookUp = endOfTurnQueue((phoneNumberIds: ReadonlyArray<string>) => {
    const version = attemptNow(FIND_BY_PHONE_NUMBER_ID, () => readDataVersion.get())
    if (Exit.isFailure(version)) return phoneNumberIds.map(() => Exit.failCause(version.cause))
    if (version.value !== dataVersion) {
      channels.clear()
      dataVersion = version.value
    }
    return phoneNumberIds.map(lookUpNow)
  })
  return { channels, lookUp }
}

/** A channel row as the repository answers it: the record, its organization and its sealed token. */
export const storedChannelOf = (row: ChannelRow): StoredChannel => ({
  organization_id: row.organization_id as OrganizationId,
  channel: decodeChannel(row),
  access_token_sealed: row.access_token_sealed
})
