import { afterAll, beforeAll, describe } from "vitest"
import Pg from "pg"
import { Effect } from "effect"
import { runChatListOracle } from "@switchboard/storage-contract"
import { PostgresStorage } from "@switchboard/storage-postgres"
import { PROBE_ROWS } from "../src/repositories/chatList.js"
import { postgresUrl, skipWithoutPostgres, storageLayer, testSchemas } from "./support.js"

// The PostgreSQL chat list answers like the memory store (the oracle) on a data set larger
// than the probe window, with dense, rare and empty filters: so both the probe and the
// exact queries of chatList.ts, and the switch between them, are exercised. One schema
// for the file, dropped afterwards.

const schemas = testSchemas()
const schema = schemas.fresh()

describe.skipIf(skipWithoutPostgres)("PostgreSQL server at POSTGRES_URL", () => {
  beforeAll(async () => {
    const pool = new Pg.Pool({ connectionString: postgresUrl! })
    try {
      await Effect.runPromise(PostgresStorage.migrate(pool, schema))
    } finally {
      await pool.end()
    }
  })
  afterAll(schemas.drop)

  runChatListOracle({ name: "PostgreSQL", chats: PROBE_ROWS + 600, makeLayer: () => storageLayer(schemas, schema, true), timeoutMs: 300_000 })
})
