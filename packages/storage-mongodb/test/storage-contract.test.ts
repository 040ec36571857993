import { randomUUID } from "node:crypto"
import { MongoClient } from "mongodb"
import { it } from "@effect/vitest"
import { Effect } from "effect"
import { afterAll, describe } from "vitest"
import { runRateLimitStoreContract, runStorageContract } from "@switchboard/storage-contract"
import { MongoRateLimitStore, MongoStorage } from "@switchboard/storage-mongodb"
import { limitsHoldAcrossInstances } from "./support/twoInstances.js"

// The whole storage contract against a real MongoDB server, when MONGODB_URL names one
// (for example mongodb://127.0.0.1:27017). Every test gets a fresh database, dropped at
// the end of the file. No server can be installed on the CI machines: without the
// variable the suite is skipped, with the reason printed.
const url = process.env.MONGODB_URL
if (url === undefined || url === "") {
  console.warn("storage-mongodb: MONGODB_URL is not set; the storage contract against a MongoDB server is skipped")
}

// A fresh database per test creates its indexes first: the project allows a real server's
// round trips (60 s, vitest.config.ts).

const databases: Array<string> = []

/** A database name no other test uses, dropped after the file's tests. */
const freshDatabase = (): string => {
  const database = `switchboard_test_${randomUUID().replace(/-/g, "").slice(0, 16)}`
  databases.push(database)
  return database
}

describe.skipIf(url === undefined || url === "")("MongoDB server at MONGODB_URL", () => {
  afterAll(async () => {
    const client = await new MongoClient(url!, { serverSelectionTimeoutMS: 5000 }).connect()
    try {
      for (const name of databases.splice(0)) await client.db(name).dropDatabase()
    } finally {
      await client.close()
    }
  })

  runStorageContract({
    name: "mongodb",
    makeLayer: () => {
      const database = freshDatabase()
      return MongoStorage.layer({ url: url!, database, serverSelectionTimeoutMS: 5000 })
    },
    // Two clients on one fresh database, as two instances would have.
    makeSharedLayers: () => {
      const database = freshDatabase()
      const layer = () => MongoStorage.layer({ url: url!, database, serverSelectionTimeoutMS: 5000 })
      return [layer(), layer()] as const
    }
  })

  it.effect("two storages on one database (two instances) never pass the plan limits together", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const database = freshDatabase()
        const first = yield* MongoStorage.make({ url: url!, database, serverSelectionTimeoutMS: 5000 })
        const second = yield* MongoStorage.make({ url: url!, database, serverSelectionTimeoutMS: 5000 })
        yield* limitsHoldAcrossInstances(first, second)
      })
    ))

  runRateLimitStoreContract({
    name: "mongodb",
    makeLayer: () => {
      const database = freshDatabase()
      return MongoRateLimitStore.layer({ url: url!, database, serverSelectionTimeoutMS: 5000 })
    }
  })
})
