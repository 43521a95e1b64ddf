/**
 * The `turn` view: a turn's per-path net changes (the `netChanges` fold), sorted by path and
 * pinned to the commit ordinal of the first page, so records committed later do not shift
 * the pages. Items whose snapshots retention pruned say so (`pruned`).
 */
import type { TurnPage } from "@forkjoin/schema"
import type { TurnRequest } from "../ViewRequests.ts"
import { coverageOf } from "./coverage.ts"
import { encodeCursor } from "./cursor.ts"
import { netChanges } from "./netChanges.ts"
import { capsOf, clampBytes, clampLimit, fingerprint, fitBytes, readCursor } from "./paging.ts"
import type { RecordRow } from "./records.ts"
import {
  checkCaller,
  decodeRow,
  isVerifiedIn,
  prunedField,
  runView,
  requestScope,
  type ViewContext,
  type ViewEffect
} from "./viewContext.ts"
import { SQL } from "./viewQueries.ts"

/** The turn view over `ctx`. */
export const turnView = (ctx: ViewContext) => (request: TurnRequest): ViewEffect<TurnPage> =>
  runView(ctx, "HistoryViews.turn", (c): TurnPage => {
    const operation = "HistoryViews.turn"
    const env = ctx.env
    checkCaller(operation, request.caller)
    const lim = clampLimit(request.limit)
    const maxBytes = clampBytes(request.maxBytes)
    const scope = requestScope(c, env, request)
    const q = fingerprint("turn", env, request.caller, request.turn, ...(request.everyThread === true ? ["everyThread"] : []))
    const cursor = readCursor(c, env, operation, request.cursor, q)
    // The high-water ordinal pins the aggregate: records committed later do not shift pages.
    const high = cursor?.o ?? c.get<{ readonly o: number }>(SQL.maxOrdinal, env)!.o
    const records = c.all<RecordRow>(SQL.turnRecords, env, request.turn, JSON.stringify(scope), high)
      .map((r) => decodeRow(operation, r))
    const net = netChanges(records)
    const lastPath = typeof cursor?.p === "string" ? cursor.p : undefined
    const rest = lastPath === undefined ? net : net.filter((n) => n.path > lastPath)
    const page = rest.slice(0, lim.limit).map((n) => ({ ...n, ...prunedField(c, [n.before, n.after]) }))
    const { capped, taken } = fitBytes(page, (n) => JSON.stringify(n).length + 1, maxBytes)
    const more = rest.length > taken.length
    const anchor = records[records.length - 1]
    const lastItem = taken[taken.length - 1]
    return {
      items: taken,
      coverage: coverageOf(records, isVerifiedIn(c)),
      truncated: capped,
      nextCursor: more && lastItem !== undefined
        ? encodeCursor({
          q,
          s: anchor?.threadId ?? request.caller,
          t: anchor?.committedAt ?? "",
          o: anchor?.commitOrdinal ?? 0,
          p: lastItem.path
        })
        : null,
      caps: capsOf(request.limit, lim, maxBytes, capped)
    }
  })
