/**
 * The `threads` view: every thread in the caller's scope (every thread of the environment for
 * the workspace's own user), ordered by thread id, with its parent, how many records it holds
 * and when the first and last were committed. It answers "where are the records".
 */
import { ThreadId, UtcTimestamp } from "@forkjoin/schema"
import type { ThreadsPage } from "@forkjoin/schema/WorkspaceIndex"
import * as Schema from "effect/Schema"
import type { ThreadsRequest } from "../ViewRequests.ts"
import { encodeCursor } from "./cursor.ts"
import { capsOf, clampBytes, clampLimit, fingerprint, fitBytes, readCursor } from "./paging.ts"
import { checkCaller, fail, requestScope, runView, type ViewContext, type ViewEffect } from "./viewContext.ts"
import { SQL } from "./viewQueries.ts"

interface ThreadRow {
  readonly thread_id: string
  readonly parent: string | null
  readonly n: number
  readonly first_at: string | null
  readonly last_at: string | null
}

const decodeThread = Schema.decodeUnknownSync(ThreadId)
const decodeTime = Schema.decodeUnknownSync(Schema.NullOr(UtcTimestamp))

/** The threads view over `ctx`. */
export const threadsView = (ctx: ViewContext) => (request: ThreadsRequest): ViewEffect<ThreadsPage> =>
  runView(ctx, "HistoryViews.threads", (c): ThreadsPage => {
    const operation = "HistoryViews.threads"
    const env = ctx.env
    checkCaller(operation, request.caller)
    const lim = clampLimit(request.limit)
    const maxBytes = clampBytes(request.maxBytes)
    const scope = requestScope(c, env, request)
    const q = fingerprint("threads", env, request.caller, ...(request.everyThread === true ? ["everyThread"] : []))
    const cursor = readCursor(c, env, operation, request.cursor, q)
    if (cursor !== undefined && typeof cursor.p !== "string") {
      throw fail(operation, "InvalidCursor", "the cursor does not belong to this view; restart without --cursor")
    }
    const after = cursor === undefined ? "" : String(cursor.p)
    const rows = c.all<ThreadRow>(SQL.threads, JSON.stringify(scope), env, after, lim.limit + 1)
    const more = rows.length > lim.limit
    const items = rows.slice(0, lim.limit).map((r) => ({
      threadId: decodeThread(r.thread_id),
      parentThreadId: r.parent === null ? null : decodeThread(r.parent),
      records: r.n,
      firstRecordAt: decodeTime(r.first_at),
      lastRecordAt: decodeTime(r.last_at)
    }))
    const { capped, taken } = fitBytes(items, (t) => Buffer.byteLength(JSON.stringify(t)) + 1, maxBytes)
    const last = taken[taken.length - 1]
    return {
      items: taken,
      truncated: capped,
      nextCursor: (more || capped) && last !== undefined ? encodeCursor({ q, s: "", t: "", o: 0, p: last.threadId }) : null,
      caps: capsOf(request.limit, lim, maxBytes, capped)
    }
  })
