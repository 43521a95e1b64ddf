/**
 * A cross-process lock held as a SQLite write transaction (`BEGIN IMMEDIATE`) on a file that
 * holds no data: exclusive among processes and among connections of one process, and
 * released by the OS when its holder dies, so a killed holder never leaves a stale lock.
 *
 * It owns the lock connection and its policy (never wait inside SQLite: the caller polls, so
 * the event loop never blocks). It does not own how long to wait nor what a timeout means
 * (the engine's `lock_timeout`), nor where the file may live (the engine's state-folder rule).
 *
 * @since 0.1.0
 */
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { cannotOpen, fromSqlite, type SqliteError } from "./SqliteError.ts"

/**
 * An open lock file.
 *
 * @category models
 * @since 0.1.0
 */
export interface LockFile {
  /** The file as opened. */
  readonly file: string
  /**
   * Takes the lock if no other connection holds it, at once, without waiting: `true` when
   * taken, held until the current scope closes; `false` when another holder has it.
   */
  readonly acquire: Effect.Effect<boolean, SqliteError, Scope.Scope>
}

/**
 * Opens the lock file `file` (its folder must exist) for the current scope; closing the scope
 * closes the connection, which releases the lock if it is held.
 *
 * @category constructors
 * @since 0.1.0
 */
export const open = (file: string): Effect.Effect<LockFile, SqliteError, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.try({
        try: () => {
          const db = new Database(file)
          // Never wait inside SQLite: that would block the event loop; the caller polls instead.
          db.pragma("busy_timeout = 0")
          // The lock database never holds data: no rollback journal file to create and delete
          // per lock (OFF is refused in better-sqlite3's defensive mode; MEMORY is equivalent here).
          db.pragma("journal_mode = MEMORY")
          return db
        },
        catch: (cause) => fromSqlite("LockFile.open", cause) ?? cannotOpen("LockFile.open", file, cause)
      }),
      (db) => Effect.sync(() => db.open && db.close())
    ),
    (db): LockFile => ({
      file,
      // Uninterruptible: a lock taken always has its release in the scope.
      acquire: Effect.uninterruptible(Effect.flatMap(
        tryBegin(db),
        (taken) => taken ? Effect.as(Effect.addFinalizer(() => Effect.sync(() => release(db))), true) : Effect.succeed(false)
      ))
    })
  )

/** `BEGIN IMMEDIATE` once: false when another connection holds the write lock (SQLITE_BUSY). */
const tryBegin = (db: Database.Database): Effect.Effect<boolean, SqliteError> =>
  Effect.suspend(() => {
    try {
      db.exec("BEGIN IMMEDIATE")
      return Effect.succeed(true)
    } catch (thrown) {
      if (thrown instanceof Database.SqliteError && thrown.code.startsWith("SQLITE_BUSY")) return Effect.succeed(false)
      const error = fromSqlite("LockFile.acquire", thrown)
      return error === undefined ? Effect.die(thrown) : Effect.fail(error)
    }
  })

const release = (db: Database.Database): void => {
  if (db.open && db.inTransaction) db.exec("ROLLBACK")
}
