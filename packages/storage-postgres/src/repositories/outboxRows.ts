import { MESSAGE_COLUMNS, QUEUED_STATE_COLUMNS } from "@switchboard/storage-sql"

// Rows of `messages` as the send queue reads them (@switchboard/storage-sql's `QueuedRow`:
// message rows with the dispatch state beside them).

export { ENDED, iso, type QueuedRow, retried } from "@switchboard/storage-sql"

/** The columns of a {@link QueuedRow}, in `SELECT` order. */
export const QUEUED_COLUMNS = `${MESSAGE_COLUMNS}, ${QUEUED_STATE_COLUMNS}`
