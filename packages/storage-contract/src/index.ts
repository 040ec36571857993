/**
 * `@switchboard/storage-contract`: the one test suite every Switchboard storage adapter
 * must pass (docs/extending.md "The contract suite"), in the manner of Keyv's test-suite. Call
 * {@link runStorageContract} from a vitest test file of the adapter's package, and
 * {@link runRateLimitStoreContract} from the test file of a rate-limit store,
 * {@link runBlobStoreContract} from the test file of a blob store;
 * {@link runChatListOracle} checks a chat list against the memory store on a larger data set.
 *
 * @packageDocumentation
 */
export { runStorageContract } from "./contract.js"
export type { StorageContractOptions } from "./options.js"
export { runChatListOracle, type ChatListOracleOptions } from "./chats-list-oracle.js"
export * as fixtures from "./fixtures.js"
export { runBlobStoreContract, type BlobStoreContractOptions } from "./blob-store.js"
export { runRateLimitStoreContract, type RateLimitStoreContractOptions } from "./rate-limit-store.js"
