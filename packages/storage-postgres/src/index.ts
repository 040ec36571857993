/**
 * Switchboard storage on PostgreSQL (docs/storage.md "PostgreSQL").
 *
 * @since 0.0.0
 */
export * as PostgresStorage from "./PostgresStorage.js"
export * as PostgresRateLimitStore from "./PostgresRateLimitStore.js"
export { SchemaNotCurrentError, SchemaTooNewError } from "./migrations.js"
