import type Sqlite from "better-sqlite3"
import type { Effect, Option } from "effect"
import type { StorageError, StoredChannel } from "@switchboard/core"
import { decoders } from "../dialect.js"
import { exactCacheOf, forgetExactCache } from "../internal/exactCache.js"
import type { Statements } from "../internal/sql.js"
import { CHANNEL_COLUMNS, type ChannelRow } from "./channelRows.js"

// The exact cache of `channels.findByPhoneNumberId`: every WhatsApp notification looks its
// channel up by Meta's phone_number_id, and alone that look-up was a read transaction of its
// own before the notification's write one (docs/benchmarks.md "Ingest").

/** Most channels the cache holds before it starts over. */
const CHANNEL_CACHE_SIZE = 10_000

/** The name of the channel cache among the connection's exact caches. */
const CHANNELS = "channels"

const FIND_BY_PHONE_NUMBER_ID = `SELECT ${CHANNEL_COLUMNS} FROM channels WHERE phone_number_id = ?`

/**
 * `findByPhoneNumberId` of the connection `db`, through its exact cache
 * (internal/exactCache.ts): the look-ups of one turn of the event loop are answered together
 * at its end, after one `PRAGMA data_version` reading (another process's commit, the admin
 * CLI removing a channel, starts the cache over); this connection's own writes to channels
 * start it over through {@link forgetChannels}; a phone_number_id no channel has is never
 * cached. So a channel added, changed, paused or removed is seen by the very next
 * notification.
 */
export const findChannelByPhoneNumberId = (
  db: Sqlite.Database,
  statements: Statements
): ((phoneNumberId: string) => Effect.Effect<Option.Option<StoredChannel>, StorageError>) =>
  exactCacheOf(db, CHANNELS, {
    operation: "channels.findByPhoneNumberId",
    maxSize: CHANNEL_CACHE_SIZE,
    find: (phoneNumberId) => {
      const row = statements.prepare<ChannelRow>(FIND_BY_PHONE_NUMBER_ID).get(phoneNumberId)
      return row === undefined ? undefined : storedChannelOf(row)
    }
  }).lookUp

/**
 * Empties the channel cache of `db`: call it after each of this connection's writes to a
 * column of `channels` that a {@link StoredChannel} holds (insert, update, delete, pause,
 * resume), which do not change `data_version`. Pacing columns are not in it.
 */
export const forgetChannels = (db: Sqlite.Database): void => forgetExactCache(db, CHANNELS)

/** A channel row as the repository answers it: the record, its organization and its sealed token. */
export const storedChannelOf = decoders.storedChannel
