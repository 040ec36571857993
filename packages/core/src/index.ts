/**
 * `@switchboard/core`: the domain of the Developer Messaging API as Effect services, the
 * Storage interface every adapter implements, and the in-memory storage.
 *
 * @packageDocumentation
 */
export * from "./contacts/Contacts.js"
export * from "./contacts/model.js"
export * as Core from "./Core.js"
export * from "./errors.js"
export * from "./groups/ContactGroups.js"
export * from "./groups/model.js"
export * from "./imports/Imports.js"
export * from "./labels/Labels.js"
export * from "./labels/model.js"
export * from "./organizations/errors.js"
export * from "./organizations/model.js"
export * from "./organizations/Organizations.js"
export * from "./random/SecureRandom.js"
export * from "./shared/errors.js"
export * from "./shared/model.js"
export * from "./shared/Settings.js"
export * from "./storage/errors.js"
export * as MemoryStorage from "./storage/MemoryStorage.js"
export * from "./storage/Storage.js"
