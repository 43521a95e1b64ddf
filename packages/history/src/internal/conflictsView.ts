/**
 * The conflicts joins held back, as the views list them beside records: those of the threads
 * a caller may see (a child's thread is `<run-id>/<task-id>`), optionally only at some paths.
 * Reads the merge store's table; a history database no join has used has none.
 */
import { ConflictRecord, type ConflictSummary } from "@forkjoin/schema"
import * as Schema from "effect/Schema"
import type { Connection } from "../Sqlite.ts"

const SQL = {
  hasTable: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'merge_conflicts'",
  ofEnvironment: "SELECT conflict_json FROM merge_conflicts WHERE environment_id = ? ORDER BY created_at, conflict_id"
} as const

const decode = Schema.decodeUnknownSync(Schema.fromJsonString(ConflictRecord))

/** The conflicts of `env` whose child thread is in `threads` (and, when given, whose path is in `paths`). */
export const conflictsIn = (
  c: Connection,
  env: string,
  threads: ReadonlyArray<string>,
  paths?: ReadonlySet<string>
): Array<ConflictSummary> => {
  if (c.get(SQL.hasTable) === undefined) return []
  const visible = new Set(threads)
  return c.all<{ readonly conflict_json: string }>(SQL.ofEnvironment, env)
    .map((row) => decode(row.conflict_json))
    .flatMap((x) =>
      // A rollback's held conflicts belong to no run: the views list the joins' only.
      x.runId !== undefined && x.childId !== undefined && visible.has(`${x.runId}/${x.childId}`) && (paths === undefined || paths.has(x.path))
        ? [{ conflictId: x.conflictId, runId: x.runId, childId: x.childId, path: x.path, status: x.status, reason: x.reason }]
        : []
    )
}
