import type { SchemaArea } from "./context.js"

/**
 * The rate-limit counters of `PostgresRateLimitStore`: an `UNLOGGED` table (no WAL: a
 * crash of the server empties it, which only restarts the current windows' counts), one
 * row per key and window, pruned by `expires_at` (ms since the epoch).
 */
export const rateLimitTables: SchemaArea = ({ schema }) => `
CREATE UNLOGGED TABLE ${schema}.rate_buckets (
  key text COLLATE "C" NOT NULL,
  window_start bigint NOT NULL,
  count integer NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (key, window_start)
);
CREATE INDEX rate_buckets_expires_at ON ${schema}.rate_buckets (expires_at);
`
