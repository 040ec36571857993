/**
 * What a schema area's DDL is written for: `schema`, the quoted schema every identifier is
 * qualified with (`${schema}.contacts`), and `trigramSchema`, the quoted schema the
 * `pg_trgm` extension lives in (its operator classes are named through it:
 * `${trigramSchema}.gin_trgm_ops`).
 */
export interface SchemaContext {
  readonly schema: string
  readonly trigramSchema: string
}

/** The DDL of one area of the schema (tables, indexes), run inside the migration's transaction. */
export type SchemaArea = (context: SchemaContext) => string
