/**
 * The synchronous core under the `Sqlite` service: opening a better-sqlite3 handle, the
 * statement-caching `Connection`, and `BEGIN IMMEDIATE` transactions. No Effect here: bodies
 * are plain synchronous functions, so no other fiber can interleave statements in them.
 */
import Database from "better-sqlite3"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Connection, SqlValue } from "../Sqlite.ts"

/** Whether `file` names a private in-memory database rather than a file. */
export const isMemory = (file: string): boolean => file === ":memory:" || file === ""

/** Opens `file`, creating its folder; SQLite's own busy wait is at most `timeoutMs`. */
export const openFile = (file: string, timeoutMs: number): Database.Database => {
  if (!isMemory(file)) fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
  return new Database(file, { timeout: timeoutMs })
}

/** The connection over `db`: every SQL string is prepared once and cached. */
export const makeConnection = (db: Database.Database): Connection => {
  const cache = new Map<string, Database.Statement<Array<SqlValue>, unknown>>()
  const statement = (sql: string) => {
    let stmt = cache.get(sql)
    if (stmt === undefined) {
      stmt = db.prepare<Array<SqlValue>, unknown>(sql)
      cache.set(sql, stmt)
    }
    return stmt
  }
  return {
    run: (sql, ...params) => statement(sql).run(...params).changes,
    get: <Row>(sql: string, ...params: ReadonlyArray<SqlValue>) => statement(sql).get(...params) as Row | undefined,
    all: <Row>(sql: string, ...params: ReadonlyArray<SqlValue>) => statement(sql).all(...params) as Array<Row>,
    exec: (sql) => {
      db.exec(sql)
    }
  }
}

/**
 * Runs `body` inside `BEGIN IMMEDIATE … COMMIT`; a throw rolls back and is rethrown.
 * `durable: false` commits at `synchronous = NORMAL`, then restores the connection's setting.
 */
export const inTransaction = <A>(
  db: Database.Database,
  connection: Connection,
  body: (connection: Connection) => A,
  durable: boolean
): A => {
  // Bodies are synchronous, so the only way to get here nested is a bug.
  if (db.inTransaction) throw new Error("Sqlite.transaction: nested transactions are not supported")
  // All of this runs synchronously: no other statement can commit under the relaxed setting.
  const before = durable ? undefined : Number(db.pragma("synchronous", { simple: true }))
  if (!durable) db.pragma("synchronous = NORMAL")
  try {
    connection.run("BEGIN IMMEDIATE")
    try {
      const result = body(connection)
      connection.run("COMMIT")
      return result
    } catch (thrown) {
      if (db.inTransaction) connection.run("ROLLBACK")
      throw thrown
    }
  } finally {
    if (before !== undefined) db.pragma(`synchronous = ${before}`)
  }
}
