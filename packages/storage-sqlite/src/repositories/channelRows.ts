import { decoders } from "../dialect.js"

// The rows of `channels` and their decoding are @switchboard/storage-sql's (read by
// channels.ts and by the send queue).

export { CHANNEL_COLUMNS, channelChangeValues, type ChannelRow, channelValues } from "@switchboard/storage-sql"

/** The channel record of a row (never its sealed token). */
export const decodeChannel = decoders.channel
