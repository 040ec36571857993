import { afterAll } from "vitest"
import { runStorageContract } from "@switchboard/storage-contract"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { tempFiles } from "./helpers.js"

const files = tempFiles()
afterAll(files.cleanup)

// A real file in a fresh temporary directory for every test.
runStorageContract({ name: "sqlite", makeLayer: () => SqliteStorage.layer({ filename: files.file() }) })
