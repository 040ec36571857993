import { runStorageContract } from "@switchboard/storage-contract"
import { MemoryStorage } from "@switchboard/core"

runStorageContract({ name: "memory", makeLayer: () => MemoryStorage.layer })
