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
runStorageContract({
  name: "mongodb documents (no server)",
  makeLayer: () => Layer.effect(Storage, MongoStorage.fromDb(makeFakeDb().db))
})

runRateLimitStoreContract({
  name: "mongodb documents (no server)",
  makeLayer: () => Layer.effect(RateLimitStore, MongoRateLimitStore.fromDb(makeFakeDb().db))
})
