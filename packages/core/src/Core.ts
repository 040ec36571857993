import { Layer } from "effect"
import { Contacts } from "./contacts/Contacts.js"
import { ContactGroups } from "./groups/ContactGroups.js"
import { Imports } from "./imports/Imports.js"
import { Labels } from "./labels/Labels.js"
import { Organizations } from "./organizations/Organizations.js"
import { SecureRandom } from "./random/SecureRandom.js"
import type { Storage } from "./storage/Storage.js"

/**
 * Every domain service of Switchboard, wired together. Needs only a {@link Storage}
 * (an adapter's Layer); provides the services and {@link SecureRandom}.
 *
 * @category layers
 */
export const layer: Layer.Layer<
  Organizations | Contacts | ContactGroups | Labels | Imports | SecureRandom,
  never,
  Storage
> = Layer.mergeAll(
  Organizations.layer,
  Contacts.layer,
  ContactGroups.layer,
  Imports.layer.pipe(Layer.provideMerge(Labels.layer))
).pipe(Layer.provideMerge(SecureRandom.layer))

/**
 * The services {@link layer} provides: what route handlers and hosts may use.
 *
 * @category layers
 */
export type CoreServices = Layer.Layer.Success<typeof layer>
