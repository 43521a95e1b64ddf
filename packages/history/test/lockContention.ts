/**
 * A write lock held by a second connection in this process until another connection's
 * `BEGIN IMMEDIATE` finds it busy, then released from the next turn of the event loop: a
 * store that waits for the lock without blocking the event loop gets it and goes on; one
 * that waits synchronously never lets the release run. `seen` is what happened, in order.
 */
import Database from "better-sqlite3"
import { vi } from "vitest"

/** The prototype of better-sqlite3's statements (a native class the module does not export). */
const statementPrototype = (): { run: (...params: Array<unknown>) => Database.RunResult } => {
  const db = new Database(":memory:")
  try {
    return Object.getPrototypeOf(db.prepare("SELECT 1"))
  } finally {
    db.close()
  }
}

const isBusy = (thrown: unknown): boolean =>
  thrown instanceof Database.SqliteError && (thrown.code.startsWith("SQLITE_BUSY") || thrown.code.startsWith("SQLITE_LOCKED"))

/** Takes `file`'s write lock now; `dispose` releases it (if still held) and stops watching. */
export const holdUntilContended = (file: string) => {
  const seen: Array<"busy" | "released"> = []
  const holder = new Database(file)
  holder.exec("BEGIN IMMEDIATE")
  const release = () => {
    if (!holder.open) return
    holder.exec("ROLLBACK")
    holder.close()
    seen.push("released")
  }
  const proto = statementPrototype()
  const run = proto.run
  const spy = vi.spyOn(proto, "run").mockImplementation(function(this: Database.Statement, ...params: Array<unknown>) {
    try {
      return run.apply(this, params)
    } catch (thrown) {
      if (this.source === "BEGIN IMMEDIATE" && isBusy(thrown)) {
        if (!seen.includes("busy")) setImmediate(release)
        seen.push("busy")
      }
      throw thrown
    }
  })
  return {
    seen,
    dispose: () => {
      spy.mockRestore()
      release()
    }
  }
}

/** `seen` with repeats collapsed: `["busy", "released"]` for a wait that let the release run. */
export const collapsed = (seen: ReadonlyArray<string>): Array<string> => seen.filter((s, i) => s !== seen[i - 1])
