import type { ChatFilters, ChatPosition, ChatSort } from "@switchboard/core"
import type { Fragment } from "./fragment.js"

/**
 * How one SQL engine stores the values Switchboard's rows carry, as the driver hands them
 * over: booleans (`0`/`1` or `true`/`false`), JSON columns (text or parsed values) and
 * lists bound as one parameter (a JSON array or a driver array). Row decoders and parameter
 * builders are built from it once per store ({@link decodersOf}), so the ingest path makes
 * no choice per row.
 *
 * @category dialect
 */
export interface SqlValues {
  /** A boolean as a statement parameter (`1`/`0`, or `true`/`false`). */
  readonly boolean: (value: boolean) => unknown
  /** A boolean column's value as the driver answers it. */
  readonly readBoolean: (value: unknown) => boolean
  /** A JSON column's value as the driver answers it (text, or already parsed), `null` for SQL `NULL`. */
  readonly readJson: (value: unknown) => unknown
  /**
   * A JSON value as a row read from this engine holds it (JSON text, or the value itself),
   * `null` for `null` and `undefined`: what a row computed in JavaScript stores, so that
   * {@link readJson} reads it back and the row is written as read.
   */
  readonly json: (value: unknown) => unknown
  /** Whether two JSON column values of rows (as {@link json} holds them) are the same document. */
  readonly sameJson: (a: unknown, b: unknown) => boolean
  /** A list of strings or numbers as the one parameter {@link SqlDialect.inList} reads. */
  readonly list: (values: ReadonlyArray<string | number>) => unknown
}

/**
 * A parameter's cast in a statement: the type a `?` is read as where the engine needs to be
 * told (PostgreSQL: `?::timestamptz`); SQLite reads every parameter as given.
 *
 * @category dialect
 */
export type SqlCast = "text" | "integer" | "bigint" | "timestamptz" | "json" | "text[]" | "bigint[]"

/**
 * One SQL engine's way of writing what Switchboard's statements share. Statements are
 * written once with `?` placeholders, through these members where the engines differ, and
 * compiled per dialect ({@link compilerOf}). A hook only one engine needs is a member here,
 * never a test of the engine in shared code.
 *
 * @example
 * const dialect: SqlDialect = sqliteDialect // from an adapter's dialect.ts
 * const sql = `SELECT uuid FROM ${dialect.table("chats")} WHERE ${dialect.inList("uuid")}`
 *
 * @category dialect
 */
export interface SqlDialect extends SqlValues {
  /** The engine's name, for messages (never compared in shared code). */
  readonly name: string
  /** The text of the `position`-th parameter (from 1): `?`, or `$1`, `$2`, … */
  readonly placeholder: (position: number) => string
  /** A table's name as statements write it: as is, or qualified by the store's schema. */
  readonly table: (name: string) => string
  /** A condition always true (`1`, or `true`). */
  readonly true: string
  /** A parameter read as `type`: `?`, or `?::type`. */
  readonly cast: (type: SqlCast) => string
  /**
   * `expression` is one of the list bound as the next parameter ({@link SqlValues.list}):
   * `expression IN (SELECT value FROM json_each(?))`, or `expression = ANY(?::text[])`.
   */
  readonly inList: (expression: string) => string
  /** The join that keeps its left side the outer loop (`CROSS JOIN`, or `JOIN`). */
  readonly orderedJoin: string
  /**
   * Appended to a subquery the planner must not flatten into the outer query (`""`, or
   * PostgreSQL's ` OFFSET 0`).
   */
  readonly subqueryFence: string
  /** The chat list's hooks. */
  readonly chatList: ChatListDialect
}

/**
 * What the chat-list planner ({@link planChatList}) asks of one engine: where a search
 * starts, how date bounds and the position of a chat without messages are written, and
 * whether the date bounds alone keep the list after a position.
 *
 * @category dialect
 */
export interface ChatListDialect {
  /** The sort value of a chat without messages (below every instant): `''`, or `'-infinity'`. */
  readonly noMessage: string
  /** `column` read as a sort value: `NULL` for a chat without messages where the engine stores a sentinel. */
  readonly sortValue: (column: string) => string
  /**
   * The conditions of `lastMessageFrom` and `lastMessageTo` on `c.last_message_at`, a bound
   * the position already implies left out (so the index range starts at the position).
   */
  readonly dateBounds: (filters: ChatFilters, sort: ChatSort, after: ChatPosition | null) => ReadonlyArray<Fragment>
  /**
   * Whether the date bounds alone keep the list after `after`: then the planner plans from
   * the start (an engine that does not combine a row comparison with a bound on its first
   * column answers `true` where that matters; others answer `false`).
   */
  readonly keysetImplied: (filters: ChatFilters, sort: ChatSort, after: ChatPosition | null) => boolean
  /** The condition that chat `c` matches the search `term` (core's rule). */
  readonly searchCondition: (term: string) => Fragment
  /**
   * Where the exact query of a search of 3+ characters starts: its `FROM` (the chats as
   * `c`) and parameters, conditions to check first, and whether {@link searchCondition}
   * must still be checked on what it finds.
   */
  readonly searchSource: (term: string) => SearchSource
  /**
   * Appended to `chats AS c` read in `by` order: the index to read (` INDEXED BY …`, for an
   * engine whose planner would choose another), or `""`.
   */
  readonly sortIndexHint: (by: ChatSort["by"]) => string
  /** Appended to `chats AS c` read by an equality filter's index, as {@link sortIndexHint}. */
  readonly equalityIndexHint: (filter: ChatEqualityFilter) => string
}

/**
 * A search's source: see {@link ChatListDialect.searchSource}.
 *
 * @category dialect
 */
export interface SearchSource {
  readonly from: string
  readonly params: ReadonlyArray<unknown>
  readonly first: ReadonlyArray<Fragment>
  readonly recheck: boolean
}

/**
 * The chat list's filters on one column that an index orders by.
 *
 * @category dialect
 */
export type ChatEqualityFilter = "status" | "assignedTo" | "favorite" | "unread"
