/**
 * The `file` view: one path's history across the caller's thread and its descendants, in
 * commit order, following moves both ways. Before the first page it asks gap detection
 * (`Gaps.ts`) to compare the file on disk with history and reports a difference in the
 * coverage (`unrecordedChanges`); it never writes (the next write or merge records the gap).
 * Items whose snapshots retention pruned say so (`pruned`); no content is read.
 */
import type { FileHistoryItem, FilePage, PatchHistoryRecord, RelativePath, UnrecordedChange } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type { StoreError } from "../HistoryStore.ts"
import type { Connection } from "../Sqlite.ts"
import type { FileRequest } from "../ViewRequests.ts"
import { coverageOf } from "./coverage.ts"
import { capsOf, clampBytes, clampLimit, cursorAt, fingerprint, readCursor } from "./paging.ts"
import { SQL as RECORD_SQL, type RecordRow } from "./records.ts"
import { type PathRefusal, workspacePathOf } from "./requestPath.ts"
import {
  callerProblem,
  decodeRow,
  fail,
  isVerifiedIn,
  prunedField,
  runView,
  requestScope,
  type ViewContext,
  type ViewEffect
} from "./viewContext.ts"
import { SQL } from "./viewQueries.ts"
import { conflictsIn } from "./conflictsView.ts"

const MAX_SEGMENTS = 256
const TOP = Number.MAX_SAFE_INTEGER

/** Compares `path` on disk with history, writing nothing: the unexplained change, if any. */
export type GapCheck = (path: RelativePath) => Effect.Effect<UnrecordedChange | undefined, StoreError>

/** How the views word a refused request path. */
const refusalDetail = (raw: string, refusal: PathRefusal): string => {
  switch (refusal) {
    case "empty":
      return "give a non-empty path"
    case "absolute_without_root":
      return `${raw} is absolute; give a workspace-relative path`
    case "outside_workspace":
      return `${raw} is outside the workspace; only paths inside it have history here`
    case "escaping":
      return `${raw} leaves (or may leave) the workspace through '..'; give the path as stored, without '..'`
    case "not_normalized":
      return `${raw} is not a normalized workspace-relative path (POSIX '/', no '.', '..' or empty segments)`
  }
}

interface Segment {
  readonly path: string
  readonly lo: number
  readonly hi: number
}

// Moves are followed whichever thread made them (a file's lineage is a workspace fact);
// only the records shown are limited to the caller's scope.
const segmentsOf = (c: Connection, env: string, start: string): { segs: Array<Segment>; capped: boolean } => {
  const segs: Array<Segment> = []
  const queue: Array<Segment> = [{ path: start, lo: 0, hi: TOP }]
  while (queue.length > 0) {
    const s = queue.shift()!
    if (segs.some((e) => e.path === s.path && e.lo <= s.lo && e.hi >= s.hi)) continue
    if (segs.length >= MAX_SEGMENTS) return { segs, capped: true }
    segs.push(s)
    for (const m of c.all<{ commit_ordinal: number; move_from: string }>(SQL.movesIn, env, s.path, s.lo, s.hi)) {
      queue.push({ path: m.move_from, lo: s.lo, hi: m.commit_ordinal - 1 })
    }
    for (const m of c.all<{ commit_ordinal: number; path: string }>(SQL.movesOut, env, s.path, s.lo, s.hi)) {
      queue.push({ path: m.path, lo: m.commit_ordinal - 1, hi: s.hi })
    }
  }
  return { segs, capped: false }
}

/** The file view over `ctx`; `gapCheck` runs before a first page when the workspace root is known. */
export const fileView = (ctx: ViewContext, gapCheck: GapCheck) => (request: FileRequest): ViewEffect<FilePage> =>
  Effect.gen(function*() {
    const operation = "HistoryViews.file"
    const env = ctx.env
    const badCaller = callerProblem(operation, request.caller)
    if (badCaller !== undefined) return yield* badCaller
    const mapped = workspacePathOf(ctx.root, request.path)
    if (Result.isFailure(mapped)) return yield* fail(operation, "PathRefused", refusalDetail(request.path, mapped.failure))
    const relative = mapped.success
    const unrecorded = ctx.root !== undefined && request.detectGaps !== false && request.cursor === undefined
      ? yield* gapCheck(relative)
      : undefined
    return yield* runView(ctx, operation, (c): FilePage => {
      const lim = clampLimit(request.limit)
      const maxBytes = clampBytes(request.maxBytes)
      const scope = requestScope(c, env, request)
      const scopeJson = JSON.stringify(scope)
      const q = fingerprint("file", env, request.caller, relative, ...(request.everyThread === true ? ["everyThread"] : []))
      const cursor = readCursor(c, env, operation, request.cursor, q)
      const after = cursor?.o ?? 0
      const { capped: segCapped, segs } = segmentsOf(c, env, relative)
      const rows: Array<{ commit_ordinal: number; path: string }> = []
      for (const s of segs) {
        if (s.hi <= after) continue
        rows.push(
          ...c.all<{ commit_ordinal: number; path: string }>(
            SQL.segmentRows,
            env,
            s.path,
            Math.max(s.lo, after),
            s.hi,
            scopeJson,
            lim.limit + 1
          )
        )
      }
      rows.sort((a, b) => a.commit_ordinal - b.commit_ordinal || (a.path < b.path ? -1 : 1))
      const unique = rows.filter((r, k) =>
        k === 0 || r.commit_ordinal !== rows[k - 1]!.commit_ordinal || r.path !== rows[k - 1]!.path
      )
      const more = unique.length > lim.limit
      const items: Array<FileHistoryItem> = []
      const records: Array<PatchHistoryRecord> = []
      let bytes = 0
      let capped = false
      for (const r of unique.slice(0, lim.limit)) {
        const row = c.get<RecordRow>(RECORD_SQL.recordByOrdinal, env, r.commit_ordinal)!
        const record = decodeRow(operation, row)
        const change = record.changes.find((ch) => ch.path === r.path)!
        const item: FileHistoryItem = {
          recordId: record.recordId,
          threadId: record.threadId,
          turnId: record.turnId,
          transactionId: record.transactionId,
          commitOrdinal: record.commitOrdinal,
          committedAt: record.committedAt,
          authority: record.authority,
          provenance: record.provenance,
          exactness: record.exactness,
          outcome: record.outcome,
          change,
          ...prunedField(c, [change.before, change.after, change.overwritten])
        }
        const size = JSON.stringify(item).length + 1
        if (items.length > 0 && bytes + size > maxBytes) {
          capped = true
          break
        }
        bytes += size
        items.push(item)
        if (records[records.length - 1] !== record) records.push(record)
      }
      const lastRecord = records[records.length - 1]
      // A first page also lists the conflicts held back at any path of this file's lineage.
      const conflicts = cursor === undefined ? conflictsIn(c, env, scope, new Set(segs.map((s) => s.path))) : []
      return {
        items,
        ...(conflicts.length > 0 ? { conflicts } : {}),
        coverage: {
          ...coverageOf(records, isVerifiedIn(c)),
          ...(unrecorded === undefined ? {} : { unrecordedChanges: [unrecorded] })
        },
        truncated: capped || segCapped,
        nextCursor: (more || capped) && lastRecord !== undefined ? cursorAt(q, lastRecord) : null,
        caps: capsOf(request.limit, lim, maxBytes, capped)
      }
    })
  })
