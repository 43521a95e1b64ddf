/**
 * The error of the `@forkjoin/sqlite` services: what failed (`operation`), why as a stable
 * `reason` (the SQLite result code's class), and SQLite's own error as `cause`. Callers that
 * speak their own error (the history store's `StoreError`) map it by `reason`, cause kept.
 *
 * @since 0.1.0
 */
import Database from "better-sqlite3"
import * as Schema from "effect/Schema"

/**
 * Why a SQLite call failed: `Busy` (another process held the write lock past the busy
 * timeout), `Constraint`, `Corrupt`, `Io` (cannot open, refused journal mode, any other
 * SQLite failure), `Schema` (the file's schema is newer than this code knows).
 *
 * @category errors
 * @since 0.1.0
 */
export const SqliteErrorReason = Schema.Literals(["Busy", "Constraint", "Corrupt", "Io", "Schema"])

/**
 * A failed SQLite call.
 *
 * @category errors
 * @since 0.1.0
 */
export class SqliteError extends Schema.TaggedError<SqliteError>()("SqliteError", {
  operation: Schema.String,
  reason: SqliteErrorReason,
  detail: Schema.optional(Schema.String),
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return `${this.operation} failed (${this.reason})${this.detail === undefined ? "" : `: ${this.detail}`}`
  }
}

const reasonOf = (code: string): SqliteError["reason"] => {
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return "Busy"
  if (code.startsWith("SQLITE_CONSTRAINT")) return "Constraint"
  if (code.startsWith("SQLITE_CORRUPT") || code === "SQLITE_NOTADB") return "Corrupt"
  return "Io"
}

/** Whether `thrown` is SQLite reporting another connection's lock (worth waiting out). */
export const isBusy = (thrown: unknown): boolean =>
  thrown instanceof Database.SqliteError && reasonOf(thrown.code) === "Busy"

/**
 * SQLite's own error (better-sqlite3's `SqliteError`, by its result code) as a `SqliteError`;
 * undefined for anything else.
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromSqlite = (operation: string, thrown: unknown): SqliteError | undefined => {
  if (!(thrown instanceof Database.SqliteError)) return undefined
  const reason = reasonOf(thrown.code)
  return new SqliteError({
    operation,
    reason,
    detail: reason === "Busy"
      ? `${thrown.code}: another process held the database write lock for longer than the busy timeout; retry`
      : `${thrown.code}: ${thrown.message}`,
    cause: thrown
  })
}

/**
 * A file that could not be opened (its folder, permissions, not a database), as `Io`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const cannotOpen = (operation: string, file: string, cause: unknown): SqliteError =>
  new SqliteError({
    operation,
    reason: "Io",
    detail: `cannot open ${file}: ${cause instanceof Error ? cause.message : String(cause)}`,
    cause
  })
