/**
 * The `diff` view: the changes of one record — named by its id, by `#N` (its commit ordinal)
 * or by its transaction id (every record of the transaction, in commit order) — as bounded
 * unified diffs from the stored blobs (read and verified through `SnapshotStore`), a one-line
 * summary for binary content or for content retention pruned, or the provider's own diff text
 * for an aggregate whose contents were not recorded.
 */
import type { DiffPage, FileChange, PatchHistoryRecord, RecordDiffFile, Sha256Hash, Snapshot } from "@forkjoin/schema"
import * as SnapshotStore from "../SnapshotStore.ts"
import type { Connection } from "../Sqlite.ts"
import { type DiffRequest, ordinalOf } from "../ViewRequests.ts"
import { coverageOf } from "./coverage.ts"
import { capsOf, clampBytes, clampDiffLines, clampLimit, cursorAt, fingerprint, readCursor } from "./paging.ts"
import { claimedDiff } from "./providerFormats.ts"
import { type RecordRow, SQL as RECORD_SQL } from "./records.ts"
import { unifiedDiff } from "./unifiedDiff.ts"
import {
  checkCaller,
  decodeRow,
  fail,
  isVerifiedIn,
  runView,
  requestScope,
  type ViewContext,
  type ViewEffect
} from "./viewContext.ts"
import { SQL } from "./viewQueries.ts"

// The two sides of a change share most chunks: one page reads each chunk once.
const CACHE_BYTES = 16 * 1024 * 1024

const blobText = (
  c: Connection,
  cache: SnapshotStore.ChunkCache,
  snapshot: Snapshot | undefined
): { bytes?: Uint8Array; text?: string; pruned?: Sha256Hash } => {
  if (snapshot === undefined) return {}
  const found = SnapshotStore.read(c, "HistoryViews.diff", snapshot.hash, cache)
  if (found._tag === "Pruned") return { pruned: snapshot.hash }
  if (found._tag === "Missing") return {}
  const bytes = found.bytes
  if (snapshot.encoding === "binary") return { bytes }
  let text = Buffer.from(bytes).toString("utf8")
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  return { bytes, text }
}

// Beside the view rather than in `viewQueries.ts`: only this view names records by transaction.
const recordsOfTransaction = "SELECT record_id, commit_ordinal, record_json FROM records " +
  "WHERE environment_id = ? AND transaction_id = ? ORDER BY commit_ordinal"

/**
 * The records a request names, in commit order and within the caller's scope: `recordId` is a
 * record id; `target` is `#N`, else a record id, else a transaction id. Refused when none is
 * visible (a record outside the scope is not found, as if it did not exist).
 */
const recordsNamed = (
  c: Connection,
  ctx: ViewContext,
  operation: string,
  request: DiffRequest,
  scope: ReadonlyArray<string>
): Array<PatchHistoryRecord> => {
  if ((request.recordId === undefined) === (request.target === undefined)) {
    throw fail(operation, "InvalidRequest", "name the records to show: a recordId or a target, not both")
  }
  const named = (request.recordId ?? request.target)!
  const ordinal = request.target === undefined ? undefined : ordinalOf(request.target)
  let rows: Array<RecordRow>
  if (ordinal !== undefined) {
    rows = [c.get<RecordRow>(RECORD_SQL.recordByOrdinal, ctx.env, ordinal)].filter((r) => r !== undefined)
  } else {
    const byId = c.get<RecordRow & { readonly environment_id: string }>(SQL.recordById, named)
    rows = byId !== undefined && byId.environment_id === ctx.env
      ? [byId]
      : request.target === undefined
      ? []
      : c.all<RecordRow>(recordsOfTransaction, ctx.env, request.target)
  }
  const records = rows.map((r) => decodeRow(operation, r)).filter((r) => scope.includes(r.threadId))
  if (records.length === 0) {
    throw fail(
      operation,
      "NotFound",
      request.target === undefined
        ? `no record ${named} is visible from thread ${request.caller}`
        : `no record, transaction or #ordinal ${named} is visible from thread ${request.caller}; give a record id, ` +
          "a transaction id or #N (the commit ordinal the timeline shows)"
    )
  }
  return records
}

/** The diff of one change, within the lines and bytes left. */
const diffItem = (
  c: Connection,
  cache: SnapshotStore.ChunkCache,
  ch: FileChange,
  event: { readonly format: string; readonly payload: string } | undefined,
  linesLeft: number,
  bytesLeft: number
): RecordDiffFile => {
  const from = ch.kind === "add" ? undefined : ch.moveFrom ?? ch.path
  const to = ch.kind === "delete" ? undefined : ch.path
  const beforeSnap = ch.kind === "add" ? ch.overwritten : ch.before
  const base = {
    kind: ch.kind,
    path: ch.path,
    ...(ch.moveFrom === undefined ? {} : { moveFrom: ch.moveFrom }),
    ...(beforeSnap === undefined ? {} : { beforeHash: beforeSnap.hash }),
    ...(ch.after === undefined ? {} : { afterHash: ch.after.hash }),
    ...(ch.overwritten === undefined ? {} : { overwritten: ch.overwritten }),
    ...(ch.merge === undefined ? {} : { merge: ch.merge })
  }
  const binary = beforeSnap?.encoding === "binary" || ch.after?.encoding === "binary"
  const before = blobText(c, cache, beforeSnap)
  const after = blobText(c, cache, ch.after)
  const pruned = [before.pruned, after.pruned].filter((h): h is Sha256Hash => h !== undefined)
  if (pruned.length > 0) {
    // Retention dropped the content; the record still names it by hash and size.
    const line = `Content of ${from === undefined ? "/dev/null" : `a/${from}`} and ${to === undefined ? "/dev/null" : `b/${to}`} ` +
      `was pruned by retention (forkjoin gc --prune-snapshots-older-than); hashes are kept\n`
    return { ...base, binary, source: "pruned", pruned, linesAdded: 0, linesRemoved: 0, diff: line, truncated: false }
  }
  const haveBefore = ch.kind === "add" && ch.overwritten === undefined ? true : before.bytes !== undefined
  const haveAfter = ch.kind === "delete" ? true : after.bytes !== undefined
  if (binary && haveBefore && haveAfter) {
    const line = `Binary files ${from === undefined ? "/dev/null" : `a/${from}`} and ${
      to === undefined ? "/dev/null" : `b/${to}`
    } differ (${beforeSnap?.bytes ?? 0} -> ${ch.after?.bytes ?? 0} bytes)\n`
    return { ...base, binary: true, source: "blobs", linesAdded: 0, linesRemoved: 0, diff: line, truncated: false }
  }
  if (haveBefore && haveAfter) {
    const d = unifiedDiff(
      { name: from, text: before.text ?? "" },
      { name: to, text: after.text ?? "" },
      { lines: linesLeft, bytes: bytesLeft }
    )
    return {
      ...base,
      binary: false,
      source: "blobs",
      linesAdded: d.linesAdded,
      linesRemoved: d.linesRemoved,
      diff: d.text,
      truncated: d.truncated
    }
  }
  const claimed = event === undefined ? undefined : claimedDiff(event.format, event.payload, ch.path)
  if (claimed === undefined) {
    return { ...base, binary, source: "unavailable", linesAdded: 0, linesRemoved: 0, diff: "", truncated: false }
  }
  const lines = claimed.text.split("\n").filter((l, k, all) => k < all.length - 1 || l !== "")
  const fit: Array<string> = []
  let bytes = 0
  for (const l of lines) {
    const size = Buffer.byteLength(l) + 1
    if (fit.length + 1 > linesLeft || bytes + size > bytesLeft) break
    fit.push(l)
    bytes += size
  }
  return {
    ...base,
    binary,
    source: "provider_event",
    linesAdded: claimed.added,
    linesRemoved: claimed.removed,
    diff: fit.map((l) => `${l}\n`).join(""),
    truncated: fit.length < lines.length
  }
}

/** The diff view over `ctx`. */
export const diffView = (ctx: ViewContext) => (request: DiffRequest): ViewEffect<DiffPage> =>
  runView(ctx, "HistoryViews.diff", (c): DiffPage => {
    const operation = "HistoryViews.diff"
    const env = ctx.env
    checkCaller(operation, request.caller)
    const lim = clampLimit(request.limit)
    const maxBytes = clampBytes(request.maxBytes)
    const maxLines = clampDiffLines(request.maxLines)
    const scope = requestScope(c, env, request)
    const records = recordsNamed(c, ctx, operation, request, scope)
    // A record id keeps its original fingerprint, so cursors issued before `target` existed still work.
    const q = fingerprint("diff", env, request.caller, request.recordId ?? `target:${request.target}`, ...(request.everyThread === true ? ["everyThread"] : []))
    const cursor = readCursor(c, env, operation, request.cursor, q)
    // Position: record `k`, change `i`; a cursor names the record by its ordinal.
    let k = cursor === undefined ? 0 : records.findIndex((r) => r.commitOrdinal === cursor.o)
    if (k < 0) throw fail(operation, "InvalidCursor", "the cursor does not belong to these records; restart without --cursor")
    let i = typeof cursor?.p === "number" ? cursor.p : 0
    const events = new Map<number, { readonly format: string; readonly payload: string } | undefined>()
    const eventOf = (at: number) => {
      if (!events.has(at)) {
        const record = records[at]!
        events.set(
          at,
          record.provenance === "provider_aggregate"
            ? c.get<{ readonly format: string; readonly payload: string }>(SQL.providerEvent, record.recordId)
            : undefined
        )
      }
      return events.get(at)
    }
    const items: Array<RecordDiffFile> = []
    const cache = SnapshotStore.makeChunkCache(CACHE_BYTES)
    let linesLeft = maxLines
    let bytesLeft = maxBytes
    let capApplied = false
    const settle = () => {
      while (k < records.length && i >= records[k]!.changes.length) {
        k++
        i = 0
      }
    }
    for (settle(); k < records.length && items.length < lim.limit; settle()) {
      if (linesLeft <= 0 || bytesLeft <= 0) {
        capApplied = true
        break
      }
      const item = diffItem(c, cache, records[k]!.changes[i]!, eventOf(k), linesLeft, bytesLeft)
      linesLeft -= item.diff.length === 0 ? 0 : item.diff.split("\n").length - 1
      bytesLeft -= Buffer.byteLength(item.diff)
      items.push(item)
      i++
      if (item.truncated) {
        capApplied = true
        settle()
        break
      }
    }
    const more = k < records.length
    return {
      items,
      coverage: coverageOf(records, isVerifiedIn(c)),
      truncated: capApplied,
      nextCursor: more ? cursorAt(q, records[k]!, i) : null,
      caps: { ...capsOf(request.limit, lim, maxBytes, capApplied), maxDiffLines: maxLines, diffCapApplied: capApplied }
    }
  })
