import { afterAll } from "vitest"
import { runChatListOracle } from "@switchboard/storage-contract"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { PROBE_ROWS } from "../src/repositories/chatList.js"
import { tempFiles } from "./helpers.js"

// The SQLite chat list answers like the memory store (the oracle) on a data set larger
// than the probe window, with dense, rare and empty filters: so both the probe and the
// exact queries of chatList.ts, and the switch between them, are exercised.

const files = tempFiles()
afterAll(files.cleanup)

runChatListOracle({ name: "SQLite", chats: PROBE_ROWS + 600, makeLayer: () => SqliteStorage.layer({ filename: files.file() }) })
