import { afterAll, describe } from "vitest"
import { runRateLimitStoreContract } from "@switchboard/storage-contract"
import { PostgresRateLimitStore } from "@switchboard/storage-postgres"
import { postgresUrl, skipWithoutPostgres, testSchemas } from "./support.js"

// The rate-limit store contract against the real server: one schema for the file (every
// test uses fresh keys), 200 concurrent increments of one counter answering 1..200.
const schemas = testSchemas()
const schema = schemas.fresh()

describe.skipIf(skipWithoutPostgres)("PostgreSQL server at POSTGRES_URL", () => {
  afterAll(schemas.drop)
  runRateLimitStoreContract({
    name: "postgres",
    makeLayer: () => PostgresRateLimitStore.layer({ connectionString: postgresUrl!, schema, poolSize: 20 })
  })
})
