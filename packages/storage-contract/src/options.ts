import type { Layer } from "effect"
import type { Storage } from "@switchboard/core"

// Every topic module of the suite takes these options, so they sit here, below contract.ts
// (which imports every topic module).

/**
 * Options of {@link runStorageContract}.
 *
 * @category contract
 */
export interface StorageContractOptions {
  /** Shown in test names, for example `"sqlite"`. */
  readonly name: string
  /**
   * Returns a Layer of a fresh, empty store. Called once per test, never shared: a scoped
   * Layer is built for the test and its finalizers (closing a database) run after it.
   */
  readonly makeLayer: () => Layer.Layer<Storage, unknown>
  /**
   * Optional: returns two Layers of Storage over ONE fresh, empty underlying store, as two
   * processes sharing a database would have them (for the memory store, one service
   * provided twice). When given, the send queue's contract also checks claims running
   * together on both stores and a creation on one seen by the other (`outbox.ts`).
   */
  readonly makeSharedLayers?: () => readonly [Layer.Layer<Storage, unknown>, Layer.Layer<Storage, unknown>]
  /**
   * Optional: how many recipients the case of a cancel and a channel removal larger than
   * the stores' batches writes (default 2 500: more than one batch of every store), and, up
   * to 1 203, how many chats the case of one large chat import writes (default 1 203: more
   * than one multi-row statement of a SQL store). A store that evaluates every filter over
   * every document (the MongoDB driver's stand-in, with no indexes) passes fewer, which
   * keeps its cases to seconds.
   */
  readonly largeCaseSize?: number
  /**
   * Optional: `true` when the store has `outbox.recordSent` (the lean record of a sent
   * message); its cases then run. The contract checks the store has it exactly when this says.
   */
  readonly recordSent?: boolean
}
