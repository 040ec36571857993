/**
 * `@switchboard/storage-contract`: the one test suite every Switchboard storage adapter
 * must pass (DESIGN §2), in the manner of Keyv's test-suite. Call
 * {@link runStorageContract} from a vitest test file of the adapter's package.
 *
 * @packageDocumentation
 */
export { runStorageContract, type StorageContractOptions } from "./contract.js"
export * as fixtures from "./fixtures.js"
