import { Layer } from "effect"
import { runStorageContract } from "@switchboard/storage-contract"
import { MemoryStorage, Storage } from "@switchboard/core"

runStorageContract({
  name: "memory",
  makeLayer: () => MemoryStorage.layer,
  // Two stores on one store: the same service instance provided twice.
  makeSharedLayers: () => {
    const service = MemoryStorage.make()
    return [Layer.succeed(Storage, service), Layer.succeed(Storage, service)] as const
  }
})
