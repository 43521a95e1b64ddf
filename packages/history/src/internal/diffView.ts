/**
 * The `diff` view: one record's changes as bounded unified diffs from the stored blobs, a
 * one-line summary for binary content, or the provider's own diff text for an aggregate
 * whose contents were not recorded.
 */
import type { DiffPage, RecordDiffFile, Snapshot } from "@forkjoin/schema"
import type { Connection } from "../Sqlite.ts"
import type { DiffRequest } from "../ViewRequests.ts"
import { coverageOf } from "./coverage.ts"
import { capsOf, clampBytes, clampDiffLines, clampLimit, cursorAt, fingerprint, readCursor } from "./paging.ts"
import { claimedDiff } from "./providerFormats.ts"
import type { RecordRow } from "./records.ts"
import { unifiedDiff } from "./unifiedDiff.ts"
import {
  checkCaller,
  decodeRow,
  fail,
  isVerifiedIn,
  runView,
  scopeOf,
  type ViewContext,
  type ViewEffect
} from "./viewContext.ts"
import { SQL } from "./viewQueries.ts"

const blobText = (c: Connection, snapshot: Snapshot | undefined): { bytes?: Uint8Array; text?: string } => {
  if (snapshot === undefined) return {}
  const row = c.get<{ readonly bytes: Uint8Array }>(SQL.blob, snapshot.hash)
  if (row === undefined) return {}
  const bytes = new Uint8Array(row.bytes.buffer, row.bytes.byteOffset, row.bytes.byteLength)
  if (snapshot.encoding === "binary") return { bytes }
  let text = Buffer.from(bytes).toString("utf8")
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  return { bytes, text }
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
    const row = c.get<RecordRow & { readonly environment_id: string; readonly thread_id: string }>(
      SQL.recordById,
      request.recordId
    )
    const scope = scopeOf(c, request.caller)
    if (row === undefined || row.environment_id !== env || !scope.includes(row.thread_id)) {
      throw fail(operation, "NotFound", `no record ${request.recordId} is visible from thread ${request.caller}`)
    }
    const record = decodeRow(operation, row)
    const q = fingerprint("diff", env, request.caller, request.recordId)
    const cursor = readCursor(c, env, operation, request.cursor, q)
    const start = typeof cursor?.p === "number" ? cursor.p : 0
    const event = record.provenance === "provider_aggregate"
      ? c.get<{ readonly format: string; readonly payload: string }>(SQL.providerEvent, record.recordId)
      : undefined
    const items: Array<RecordDiffFile> = []
    let linesLeft = maxLines
    let bytesLeft = maxBytes
    let capApplied = false
    let i = start
    for (; i < record.changes.length && items.length < lim.limit; i++) {
      if (linesLeft <= 0 || bytesLeft <= 0) {
        capApplied = true
        break
      }
      const ch = record.changes[i]!
      const from = ch.kind === "add" ? undefined : ch.moveFrom ?? ch.path
      const to = ch.kind === "delete" ? undefined : ch.path
      const beforeSnap = ch.kind === "add" ? ch.overwritten : ch.before
      const base = {
        kind: ch.kind,
        path: ch.path,
        ...(ch.moveFrom === undefined ? {} : { moveFrom: ch.moveFrom }),
        ...(beforeSnap === undefined ? {} : { beforeHash: beforeSnap.hash }),
        ...(ch.after === undefined ? {} : { afterHash: ch.after.hash })
      }
      const binary = beforeSnap?.encoding === "binary" || ch.after?.encoding === "binary"
      const before = blobText(c, beforeSnap)
      const after = blobText(c, ch.after)
      const haveBefore = ch.kind === "add" && ch.overwritten === undefined ? true : before.bytes !== undefined
      const haveAfter = ch.kind === "delete" ? true : after.bytes !== undefined
      let item: RecordDiffFile
      if (binary && haveBefore && haveAfter) {
        const line = `Binary files ${from === undefined ? "/dev/null" : `a/${from}`} and ${
          to === undefined ? "/dev/null" : `b/${to}`
        } differ (${beforeSnap?.bytes ?? 0} -> ${ch.after?.bytes ?? 0} bytes)\n`
        item = { ...base, binary: true, source: "blobs", linesAdded: 0, linesRemoved: 0, diff: line, truncated: false }
      } else if (haveBefore && haveAfter) {
        const d = unifiedDiff(
          { name: from, text: before.text ?? "" },
          { name: to, text: after.text ?? "" },
          { lines: linesLeft, bytes: bytesLeft }
        )
        item = {
          ...base,
          binary: false,
          source: "blobs",
          linesAdded: d.linesAdded,
          linesRemoved: d.linesRemoved,
          diff: d.text,
          truncated: d.truncated
        }
      } else {
        const claimed = event === undefined ? undefined : claimedDiff(event.format, event.payload, ch.path)
        if (claimed === undefined) {
          item = {
            ...base,
            binary,
            source: "unavailable",
            linesAdded: 0,
            linesRemoved: 0,
            diff: "",
            truncated: false
          }
        } else {
          const lines = claimed.text.split("\n").filter((l, k, all) => k < all.length - 1 || l !== "")
          const fit: Array<string> = []
          let bytes = 0
          for (const l of lines) {
            const size = Buffer.byteLength(l) + 1
            if (fit.length + 1 > linesLeft || bytes + size > bytesLeft) break
            fit.push(l)
            bytes += size
          }
          item = {
            ...base,
            binary,
            source: "provider_event",
            linesAdded: claimed.added,
            linesRemoved: claimed.removed,
            diff: fit.map((l) => `${l}\n`).join(""),
            truncated: fit.length < lines.length
          }
        }
      }
      linesLeft -= item.diff.length === 0 ? 0 : item.diff.split("\n").length - 1
      bytesLeft -= Buffer.byteLength(item.diff)
      if (item.truncated) capApplied = true
      items.push(item)
      if (item.truncated) {
        i++
        break
      }
    }
    const more = i < record.changes.length
    return {
      items,
      coverage: coverageOf([record], isVerifiedIn(c)),
      truncated: capApplied,
      nextCursor: more ? cursorAt(q, record, i) : null,
      caps: { ...capsOf(request.limit, lim, maxBytes, capApplied), maxDiffLines: maxLines, diffCapApplied: capApplied }
    }
  })
