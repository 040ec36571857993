import { Layer } from "effect"
import { RateLimitStore, Storage } from "@switchboard/core"
import { runRateLimitStoreContract, runStorageContract } from "@switchboard/storage-contract"
import { MongoRateLimitStore, MongoStorage } from "@switchboard/storage-mongodb"
import { makeFakeDb } from "./support/fakeMongo.js"

// The same contract suite, run without a server: the adapter's real repositories over the
// in-memory driver stand-in of support/fakeMongo.ts, where mingo evaluates every filter,
// update, pipeline and aggregation the adapter builds. It checks that those documents mean
// what the contract needs; the server itself is covered by storage-contract.test.ts when
// MONGODB_URL is set.
// mingo evaluates every filter over every document of a collection (the stand-in has no
// indexes): the send queue's case of 40 claims racing over 200 messages takes seconds here
// (the project's timeout is 60 s, vitest.config.ts).

runStorageContract({
  name: "mongodb documents (no server)",
  makeLayer: () => Layer.effect(Storage, MongoStorage.fromDb(makeFakeDb().db)),
  // Past SQLite's batch of 100; the MongoDB server's run (storage-contract.test.ts) takes the
  // default 2 500, past its batches of 1 000 (the stand-in would take minutes over those).
  largeCaseSize: 150,
  // Two storages on one stand-in database, as two processes on one database would have.
  makeSharedLayers: () => {
    const { db } = makeFakeDb()
    return [Layer.effect(Storage, MongoStorage.fromDb(db)), Layer.effect(Storage, MongoStorage.fromDb(db))] as const
  }
})

runRateLimitStoreContract({
  name: "mongodb documents (no server)",
  makeLayer: () => Layer.effect(RateLimitStore, MongoRateLimitStore.fromDb(makeFakeDb().db))
})
