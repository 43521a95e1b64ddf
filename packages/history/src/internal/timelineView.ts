/**
 * The `timeline` view: a thread's (with its descendants, optionally) or a turn's records in
 * commit order, within the caller's scope (every record for the workspace's own user).
 */
import type { TimelinePage } from "@forkjoin/schema"
import type { TimelineRequest } from "../ViewRequests.ts"
import { coverageOf } from "./coverage.ts"
import { capsOf, clampBytes, clampLimit, cursorAt, fingerprint, fitBytes, readCursor } from "./paging.ts"
import type { RecordRow } from "./records.ts"
import {
  checkCaller,
  decodeRow,
  fail,
  isVerifiedIn,
  requestScope,
  runView,
  scopeOf,
  type ViewContext,
  type ViewEffect
} from "./viewContext.ts"
import { SQL } from "./viewQueries.ts"
import { conflictsIn } from "./conflictsView.ts"

/** The timeline view over `ctx`. */
export const timelineView = (ctx: ViewContext) => (request: TimelineRequest): ViewEffect<TimelinePage> =>
  runView(ctx, "HistoryViews.timeline", (c): TimelinePage => {
    const operation = "HistoryViews.timeline"
    const env = ctx.env
    checkCaller(operation, request.caller)
    if (request.thread !== undefined && request.turn !== undefined) {
      throw fail(operation, "InvalidRequest", "give a thread or a turn, not both")
    }
    const lim = clampLimit(request.limit)
    const maxBytes = clampBytes(request.maxBytes)
    const scope = requestScope(c, env, request)
    // The workspace's own user without a thread or turn: every record, whatever its thread.
    const everyRecord = request.everyThread === true && request.thread === undefined && request.turn === undefined
    const q = fingerprint(
      "timeline",
      env,
      request.caller,
      request.thread,
      request.turn,
      request.descendants === true,
      ...(request.everyThread === true ? ["everyThread"] : [])
    )
    const cursor = readCursor(c, env, operation, request.cursor, q)
    const after = cursor?.o ?? 0
    let rows: Array<RecordRow>
    if (everyRecord) {
      rows = c.all<RecordRow>(SQL.timelineAll, env, after, lim.limit + 1)
    } else if (request.turn !== undefined) {
      rows = c.all<RecordRow>(SQL.timelineTurn, env, request.turn, JSON.stringify(scope), after, lim.limit + 1)
    } else {
      const thread = request.thread ?? request.caller
      if (!scope.includes(thread)) {
        throw fail(operation, "NotVisible", `thread ${thread} is not ${request.caller} nor one of its descendants`)
      }
      rows = request.descendants === true
        ? c.all<RecordRow>(
          SQL.timelineThreads,
          env,
          JSON.stringify(scopeOf(c, thread)),
          after,
          lim.limit + 1
        )
        : c.all<RecordRow>(SQL.timelineThread, env, thread, after, lim.limit + 1)
    }
    const more = rows.length > lim.limit
    const page = rows.slice(0, lim.limit)
    const { capped, taken } = fitBytes(page, (r) => Buffer.byteLength(r.record_json) + 1, maxBytes)
    const items = taken.map((r) => decodeRow(operation, r))
    const last = items[items.length - 1]
    // A first page of a thread's timeline also lists the conflicts its threads hold back.
    const conflicts = request.turn === undefined && cursor === undefined
      ? conflictsIn(
        c,
        env,
        everyRecord ? scope : request.descendants === true ? scopeOf(c, request.thread ?? request.caller) : [request.thread ?? request.caller]
      )
      : []
    return {
      items,
      ...(conflicts.length > 0 ? { conflicts } : {}),
      coverage: coverageOf(items, isVerifiedIn(c)),
      truncated: capped,
      nextCursor: (more || capped) && last !== undefined ? cursorAt(q, last) : null,
      caps: capsOf(request.limit, lim, maxBytes, capped)
    }
  })
