import { afterAll } from "vitest"
import { runStorageContract } from "@switchboard/storage-contract"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { tempFiles } from "./helpers.js"

const files = tempFiles()
afterAll(files.cleanup)

// A real file in a fresh temporary directory for every test; for the shared-store cases, two
// Layers (two connections) on one file, as two processes would have them.
runStorageContract({
  name: "sqlite",
  recordSent: true,
  makeLayer: () => SqliteStorage.layer({ filename: files.file() }),
  makeSharedLayers: () => {
    const filename = files.file()
    return [SqliteStorage.layer({ filename }), SqliteStorage.layer({ filename })] as const
  }
})
