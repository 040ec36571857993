import { afterAll, beforeAll, describe } from "vitest"
import { Effect } from "effect"
import { runStorageContract } from "@switchboard/storage-contract"
import { PostgresStorage } from "@switchboard/storage-postgres"
import Pg from "pg"
import { postgresUrl, skipWithoutPostgres, storageLayer, testSchemas } from "./support.js"

// The whole storage contract against the real PostgreSQL server at POSTGRES_URL: one
// schema for the file, migrated once, emptied before each test; for the shared-store cases,
// two stores (two pools) on it, as two processes would have them.
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

  runStorageContract({
    name: "postgres",
    recordSent: true,
    makeLayer: () => storageLayer(schemas, schema, true),
    makeSharedLayers: () => [storageLayer(schemas, schema, true), storageLayer(schemas, schema, false)] as const
  })
})
