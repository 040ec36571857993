import { Layer } from "effect"
import { Organizations } from "./organizations/Organizations.js"
import { SecureRandom } from "./random/SecureRandom.js"
import type { Storage } from "./storage/Storage.js"

/**
 * Every domain service of Switchboard, wired together. Needs only a {@link Storage}
 * (an adapter's Layer); provides the services and {@link SecureRandom}.
 *
 * @category layers
 */
export const layer: Layer.Layer<Organizations | SecureRandom, never, Storage> = Organizations.layer.pipe(
  Layer.provideMerge(SecureRandom.layer)
)

/**
 * The services {@link layer} provides: what route handlers and hosts may use.
 *
 * @category layers
 */
export type CoreServices = Layer.Layer.Success<typeof layer>
