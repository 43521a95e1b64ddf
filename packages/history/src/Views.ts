/**
 * The history views (SPEC §4.4): `timeline` (a thread's or a turn's records in commit
 * order), `turn` (a turn's per-path net changes, moves followed), `diff` (one record as
 * bounded unified diffs, from the blobs) and `file` (one path across the caller's thread and
 * its descendants, following moves both ways). Every response is a page with `coverage`,
 * `truncated`, an opaque `nextCursor` and the `caps` in force.
 *
 * Scope: every request names the caller's thread; it sees that thread and its registered
 * descendants (`HistoryStore.registerThread`), nothing else. Paths are workspace-relative; a
 * path outside the workspace is refused, never normalised into it. With a workspace `root`,
 * `file` also compares the file on disk with its last recorded content and records a `gap`
 * when nothing explains the difference (SPEC §4.5).
 *
 * It owns reading and projecting the store's tables. It does not own writing records (the
 * store, the engine, `ProviderAggregates`) nor rendering for humans (the CLI).
 *
 * @since 0.1.0
 */
import { describeText } from "@forkjoin/patch/TextInfo"
import {
  type Coverage,
  type DiffPage,
  type EnvironmentId,
  type Exactness,
  type FileChange,
  type FileHistoryItem,
  type FilePage,
  PatchHistoryRecord,
  RecordDraft,
  RelativePath,
  type RecordDiffFile,
  type Snapshot,
  type TimelinePage,
  type TurnPage,
  type TurnPathChange,
  type ViewCaps
} from "@forkjoin/schema"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { createHash, randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { StoreError } from "./HistoryStore.ts"
import { HistoryStore } from "./HistoryStore.ts"
import { layerNoDeps as storeLayerNoDeps, sqliteOptions } from "./HistoryStoreSqlite.ts"
import { claimedDiff } from "./internal/providerFormats.ts"
import { type CursorData, decodeCursor, encodeCursor } from "./internal/cursor.ts"
import { insertBlobs, insertRecord, prepareRecordSync, type RecordRow, sha256 } from "./internal/records.ts"
import { unifiedDiff } from "./internal/unifiedDiff.ts"
import { type Connection, Sqlite, type SqliteOptions } from "./Sqlite.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * Why a view refused a request: the record or thread is not visible from the caller
 * (`NotVisible`), nothing has that id (`NotFound`), the path is outside the workspace or not
 * a clean relative path (`PathRefused`), the cursor is not one of this query's
 * (`InvalidCursor`), or the request is malformed (`InvalidRequest`).
 *
 * @category errors
 * @since 0.1.0
 */
export class ViewError extends Schema.TaggedError<ViewError>()("ViewError", {
  operation: Schema.String,
  reason: Schema.Literals(["NotVisible", "NotFound", "PathRefused", "InvalidCursor", "InvalidRequest"]),
  detail: Schema.String
}) {
  override get message() {
    return `${this.operation}: ${this.detail}`
  }
}

/**
 * Paging options shared by every view: `cursor` (from a previous page's `nextCursor`),
 * `limit` (items per page, default 100, clamped to 1..1000) and `maxBytes` (encoded items
 * per response, default 1 MiB, clamped to 1 KiB..16 MiB; at least one item is always sent).
 *
 * @category models
 * @since 0.1.0
 */
export interface PageOptions {
  readonly cursor?: string | undefined
  readonly limit?: number | undefined
  readonly maxBytes?: number | undefined
}

/**
 * A timeline request: the records of `thread` (default: the caller's; with `descendants`,
 * its descendants' too) or of `turn`, in commit order.
 *
 * @category models
 * @since 0.1.0
 */
export interface TimelineRequest extends PageOptions {
  readonly caller: string
  readonly thread?: string | undefined
  readonly turn?: string | undefined
  readonly descendants?: boolean | undefined
}

/**
 * A turn-aggregate request.
 *
 * @category models
 * @since 0.1.0
 */
export interface TurnRequest extends PageOptions {
  readonly caller: string
  readonly turn: string
}

/**
 * A record-diff request; `maxLines` caps the diff lines per response (default 2000, max 100000).
 *
 * @category models
 * @since 0.1.0
 */
export interface DiffRequest extends PageOptions {
  readonly caller: string
  readonly recordId: string
  readonly maxLines?: number | undefined
}

/**
 * A file-history request: `path` is workspace-relative (an absolute path inside the
 * workspace root is accepted); `detectGaps` (default true with a root) checks the disk.
 *
 * @category models
 * @since 0.1.0
 */
export interface FileRequest extends PageOptions {
  readonly caller: string
  readonly path: string
  readonly detectGaps?: boolean | undefined
  /** The turn a discovered gap is attributed to (default `history-view`). */
  readonly turn?: string | undefined
}

/**
 * Which environment the views read, and the workspace root (needed for gap detection and
 * for accepting absolute paths).
 *
 * @category models
 * @since 0.1.0
 */
export interface ViewsConfig {
  readonly environmentId: EnvironmentId
  readonly root?: string | undefined
}

/** Page-size and byte caps (SPEC §4.4). */
const DEFAULT_LIMIT = 100
const MAX_LIMIT = 1000
const DEFAULT_MAX_BYTES = 1024 * 1024
const MIN_MAX_BYTES = 1024
const MAX_MAX_BYTES = 16 * 1024 * 1024
const DEFAULT_DIFF_LINES = 2000
const MAX_DIFF_LINES = 100_000
const MAX_SEGMENTS = 256
const TOP = Number.MAX_SAFE_INTEGER

// -------------------------------------------------------------------------------------
// service
// -------------------------------------------------------------------------------------

type ViewEffect<A> = Effect.Effect<A, ViewError | StoreError>

/**
 * The history views over one environment of a history database.
 *
 * @category services
 * @since 0.1.0
 */
export class HistoryViews extends Context.Service<HistoryViews, {
  /** A thread's (or turn's) records in commit order. */
  readonly timeline: (request: TimelineRequest) => ViewEffect<TimelinePage>
  /** A turn's per-path net changes (sorted by path), moves followed. */
  readonly turn: (request: TurnRequest) => ViewEffect<TurnPage>
  /** One record's changes as bounded unified diffs. */
  readonly diff: (request: DiffRequest) => ViewEffect<DiffPage>
  /** One path's history across the caller's thread and descendants, moves followed both ways. */
  readonly file: (request: FileRequest) => ViewEffect<FilePage>
}>()("forkjoin/history/HistoryViews") {
  /** The views over an already provided `Sqlite` (opened with the store's migrations). */
  static readonly layerNoDeps = (config: ViewsConfig): Layer.Layer<HistoryViews, never, Sqlite> =>
    Layer.effect(HistoryViews, make(config))
  /** The views over the database `file`. */
  static readonly layerSqlite = (
    file: string,
    config: ViewsConfig,
    options?: Omit<SqliteOptions, "migrations">
  ): Layer.Layer<HistoryViews, StoreError> =>
    HistoryViews.layerNoDeps(config).pipe(Layer.provide(Sqlite.layer(file, sqliteOptions(options))))
  /** The views and the store over one connection to `file` (gap recording, ingestion, CLI). */
  static readonly layerWithStore = (
    file: string,
    config: ViewsConfig,
    options?: Omit<SqliteOptions, "migrations">
  ): Layer.Layer<HistoryViews | HistoryStore | Sqlite, StoreError> =>
    Layer.mergeAll(HistoryViews.layerNoDeps(config), storeLayerNoDeps).pipe(
      Layer.provideMerge(Sqlite.layer(file, sqliteOptions(options)))
    )
}

// -------------------------------------------------------------------------------------
// SQL
// -------------------------------------------------------------------------------------

const SQL = {
  scope: "WITH RECURSIVE sub(t) AS (SELECT ? UNION SELECT th.thread_id FROM threads th JOIN sub ON th.parent_thread_id = sub.t) " +
    "SELECT t FROM sub",
  recordAt: "SELECT thread_id, committed_at FROM records WHERE environment_id = ? AND commit_ordinal = ?",
  timelineThread: "SELECT record_id, commit_ordinal, record_json FROM records " +
    "WHERE environment_id = ? AND thread_id = ? AND commit_ordinal > ? ORDER BY commit_ordinal LIMIT ?",
  timelineThreads: "SELECT record_id, commit_ordinal, record_json FROM records " +
    "WHERE environment_id = ? AND thread_id IN (SELECT value FROM json_each(?)) AND commit_ordinal > ? " +
    "ORDER BY commit_ordinal LIMIT ?",
  timelineTurn: "SELECT record_id, commit_ordinal, record_json FROM records " +
    "WHERE environment_id = ? AND turn_id = ? AND thread_id IN (SELECT value FROM json_each(?)) AND commit_ordinal > ? " +
    "ORDER BY commit_ordinal LIMIT ?",
  turnRecords: "SELECT record_id, commit_ordinal, record_json FROM records " +
    "WHERE environment_id = ? AND turn_id = ? AND thread_id IN (SELECT value FROM json_each(?)) AND commit_ordinal <= ? " +
    "ORDER BY commit_ordinal",
  maxOrdinal: "SELECT COALESCE(MAX(commit_ordinal), 0) AS o FROM records WHERE environment_id = ?",
  recordById: "SELECT record_id, commit_ordinal, record_json, environment_id, thread_id FROM records WHERE record_id = ?",
  recordByOrdinal: "SELECT record_id, commit_ordinal, record_json FROM records WHERE environment_id = ? AND commit_ordinal = ?",
  verified: "SELECT 1 AS v FROM records WHERE verifies = ? AND exactness = 'exact' LIMIT 1",
  blob: "SELECT bytes FROM blobs WHERE hash = ?",
  providerEvent: "SELECT format, payload FROM provider_events WHERE record_id = ?",
  // INDEXED BY: the planner otherwise walks every change of the path through the primary key
  // (50,000 rows for a hot file) to find its few moves.
  movesIn: "SELECT commit_ordinal, move_from FROM record_changes INDEXED BY record_changes_moved_in " +
    "WHERE environment_id = ? AND path = ? " +
    "AND move_from IS NOT NULL AND commit_ordinal > ? AND commit_ordinal <= ? ORDER BY commit_ordinal",
  movesOut: "SELECT commit_ordinal, path FROM record_changes WHERE environment_id = ? AND move_from = ? " +
    "AND commit_ordinal > ? AND commit_ordinal <= ? ORDER BY commit_ordinal",
  segmentRows: "SELECT commit_ordinal, path FROM record_changes WHERE environment_id = ? AND path = ? " +
    "AND commit_ordinal > ? AND commit_ordinal <= ? AND thread_id IN (SELECT value FROM json_each(?)) " +
    "ORDER BY commit_ordinal LIMIT ?",
  lastAt: "SELECT commit_ordinal FROM record_changes WHERE environment_id = ? AND path = ? " +
    "ORDER BY commit_ordinal DESC LIMIT 1",
  lastMovedOut: "SELECT commit_ordinal FROM record_changes WHERE environment_id = ? AND move_from = ? " +
    "AND move_from IS NOT NULL ORDER BY commit_ordinal DESC LIMIT 1",
  openIntents: "SELECT intent_json FROM intents WHERE environment_id = ? AND status = 'open'"
} as const

// -------------------------------------------------------------------------------------
// pure helpers
// -------------------------------------------------------------------------------------

const decodeRecordJson = Schema.decodeUnknownSync(Schema.fromJsonString(PatchHistoryRecord))

const RANK: Record<Exactness, number> = { exact: 0, partial: 1, uncertain: 2 }
const worst = (a: Exactness, b: Exactness): Exactness => (RANK[a] >= RANK[b] ? a : b)

const clampLimit = (requested: number | undefined) => {
  if (requested === undefined || !Number.isFinite(requested)) return { limit: DEFAULT_LIMIT, clamped: false }
  const limit = Math.min(MAX_LIMIT, Math.max(1, Math.floor(requested)))
  return { limit, clamped: limit !== requested }
}

const clampBytes = (requested: number | undefined): number =>
  requested === undefined || !Number.isFinite(requested)
    ? DEFAULT_MAX_BYTES
    : Math.min(MAX_MAX_BYTES, Math.max(MIN_MAX_BYTES, Math.floor(requested)))

const fingerprint = (...parts: ReadonlyArray<string | number | boolean | undefined>): string =>
  createHash("sha256").update(JSON.stringify(parts)).digest("base64url").slice(0, 12)

/**
 * Counts the certainty labels of some records: exactness, gaps, provider aggregates and
 * how many of those have an exact verification record.
 *
 * @category combinators
 * @since 0.1.0
 */
export const coverageOf = (
  records: ReadonlyArray<PatchHistoryRecord>,
  isVerified: (record: PatchHistoryRecord) => boolean
): Coverage => {
  const c = { records: 0, exact: 0, partial: 0, uncertain: 0, gaps: 0, providerAggregates: 0, verifiedAggregates: 0 }
  for (const r of records) {
    c.records++
    c[r.exactness]++
    if (r.outcome === "gap") c.gaps++
    if (r.provenance === "provider_aggregate") {
      c.providerAggregates++
      if (isVerified(r)) c.verifiedAggregates++
    }
  }
  return c
}

interface NetEntry {
  origin: string | undefined
  before: Snapshot | undefined
  after: Snapshot | undefined
  existedBefore: boolean
  existsAfter: boolean
  exactness: Exactness
  records: Array<PatchHistoryRecord["recordId"]>
}

/**
 * Combines records (in commit order) into per-path net changes, following moves: a file
 * moved twice reports one move from its first to its last name; a file added then deleted
 * in the same records does not appear; content that ends where it started is omitted.
 * Verification records (`verification:` transactions) describe, they do not change: skipped.
 *
 * @category combinators
 * @since 0.1.0
 */
export const netChanges = (records: ReadonlyArray<PatchHistoryRecord>): Array<TurnPathChange> => {
  const live = new Map<string, NetEntry>()
  const gone: Array<NetEntry> = []
  const touch = (e: NetEntry, r: PatchHistoryRecord) => {
    e.exactness = worst(e.exactness, r.exactness)
    if (e.records[e.records.length - 1] !== r.recordId) e.records.push(r.recordId)
  }
  const retire = (p: string) => {
    const e = live.get(p)
    if (e === undefined) return
    live.delete(p)
    e.existsAfter = false
    e.after = undefined
    gone.push(e)
  }
  for (const r of records) {
    if (r.transactionId.startsWith("verification:")) continue
    for (const c of r.changes) {
      if (c.kind === "move") {
        const from = c.moveFrom!
        const e: NetEntry = live.get(from) ??
          { origin: from, before: c.before, after: undefined, existedBefore: true, existsAfter: true, exactness: "exact", records: [] }
        live.delete(from)
        if (live.has(c.path)) retire(c.path)
        else if (c.overwritten !== undefined) {
          gone.push({
            origin: c.path,
            before: c.overwritten,
            after: undefined,
            existedBefore: true,
            existsAfter: false,
            exactness: r.exactness,
            records: [r.recordId]
          })
        }
        e.after = c.after
        e.existsAfter = true
        touch(e, r)
        live.set(c.path, e)
        continue
      }
      let e = live.get(c.path)
      if (e === undefined) {
        const existed = c.kind !== "add" || c.overwritten !== undefined
        e = {
          origin: existed ? c.path : undefined,
          before: c.kind === "add" ? c.overwritten : c.before,
          after: undefined,
          existedBefore: existed,
          existsAfter: true,
          exactness: "exact",
          records: []
        }
        live.set(c.path, e)
      }
      if (c.kind === "delete") {
        touch(e, r)
        retire(c.path)
        continue
      }
      e.after = c.after
      e.existsAfter = true
      touch(e, r)
    }
  }
  const out: Array<TurnPathChange> = []
  const emit = (p: string | undefined, e: NetEntry) => {
    const base = {
      ...(e.before === undefined ? {} : { before: e.before }),
      ...(e.after === undefined ? {} : { after: e.after }),
      exactness: e.exactness,
      records: e.records
    }
    if (!e.existedBefore && !e.existsAfter) return
    if (!e.existedBefore) out.push({ kind: "add", path: p as RelativePath, ...base })
    else if (!e.existsAfter) out.push({ kind: "delete", path: e.origin as RelativePath, ...base })
    else if (e.origin !== p) out.push({ kind: "move", path: p as RelativePath, moveFrom: e.origin as RelativePath, ...base })
    else if (e.before === undefined || e.after === undefined || e.before.hash !== e.after.hash || e.before.mode !== e.after.mode) {
      out.push({ kind: "update", path: p as RelativePath, ...base })
    }
  }
  for (const e of gone) emit(undefined, e)
  for (const [p, e] of live) emit(p, e)
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.kind === "delete" ? -1 : 1))
}

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

/**
 * Builds the views over the `Sqlite` service for one environment.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (config: ViewsConfig): Effect.Effect<typeof HistoryViews.Service, never, Sqlite> =>
  Effect.gen(function*() {
    const sql = yield* Sqlite
    const env = config.environmentId
    const root = config.root === undefined ? undefined : fs.realpathSync(config.root)

    const fail = (operation: string, reason: ViewError["reason"], detail: string) =>
      new ViewError({ operation, reason, detail })

    /** `sql.run` whose body may throw a `ViewError` (a refusal, not a bug). */
    const runView = <A>(operation: string, body: (c: Connection) => A): ViewEffect<A> =>
      sql.run(operation, (c): { readonly ok: A } | { readonly refused: ViewError } => {
        try {
          return { ok: body(c) }
        } catch (e) {
          if (e instanceof ViewError) return { refused: e }
          throw e
        }
      }).pipe(Effect.flatMap((r) => ("refused" in r ? Effect.fail(r.refused) : Effect.succeed(r.ok))))

    const scopeOf = (c: Connection, caller: string): Array<string> =>
      c.all<{ readonly t: string }>(SQL.scope, caller).map((r) => r.t)

    const decodeRow = (operation: string, row: RecordRow): PatchHistoryRecord => {
      try {
        return decodeRecordJson(row.record_json)
      } catch (e) {
        throw new StoreError({ operation, reason: "Corrupt", detail: `record ${row.record_id} does not decode`, cause: e })
      }
    }

    const isVerifiedIn = (c: Connection) => (r: PatchHistoryRecord) => c.get(SQL.verified, r.recordId) !== undefined

    const checkCaller = (operation: string, caller: string) => {
      if (typeof caller !== "string" || caller.length === 0 || caller.length > 256) {
        throw fail(operation, "InvalidRequest", "name the caller's thread (a non-empty thread id)")
      }
    }

    /** Reads and checks a cursor against this query and the database. */
    const readCursor = (c: Connection, operation: string, text: string | undefined, q: string): CursorData | undefined => {
      if (text === undefined) return undefined
      const data = decodeCursor(text)
      if (typeof data === "string") throw fail(operation, "InvalidCursor", `the cursor is ${data}; pass a nextCursor this view returned`)
      if (data.q !== q) throw fail(operation, "InvalidCursor", "the cursor belongs to a different query; restart without --cursor")
      if (data.o > 0) {
        const at = c.get<{ readonly thread_id: string; readonly committed_at: string }>(SQL.recordAt, env, data.o)
        if (at === undefined || at.thread_id !== data.s || at.committed_at !== data.t) {
          throw fail(operation, "InvalidCursor", "the cursor does not match this history database; restart without --cursor")
        }
      }
      return data
    }

    const cursorAt = (q: string, r: PatchHistoryRecord, p?: string | number): string =>
      encodeCursor({ q, s: r.threadId, t: r.committedAt, o: r.commitOrdinal, ...(p === undefined ? {} : { p }) })

    const capsOf = (
      requested: number | undefined,
      lim: { limit: number; clamped: boolean },
      maxBytes: number,
      bytesCapApplied: boolean
    ): ViewCaps => ({
      ...(requested === undefined ? {} : { requestedLimit: Number.isFinite(requested) ? Math.trunc(requested) : 0 }),
      limit: lim.limit,
      limitClamped: lim.clamped,
      maxBytes,
      bytesCapApplied
    })

    /** Takes items while they fit in `maxBytes` (always at least one). */
    const fitBytes = <A>(items: ReadonlyArray<A>, sizeOf: (a: A) => number, maxBytes: number) => {
      let used = 0
      let n = 0
      for (const item of items) {
        const size = sizeOf(item)
        if (n > 0 && used + size > maxBytes) break
        used += size
        n++
      }
      return { taken: items.slice(0, n), capped: n < items.length }
    }

    // ---------------------------------------------------------------------------- timeline

    const timeline = (request: TimelineRequest): ViewEffect<TimelinePage> =>
      runView("HistoryViews.timeline", (c): TimelinePage => {
        const operation = "HistoryViews.timeline"
        checkCaller(operation, request.caller)
        if (request.thread !== undefined && request.turn !== undefined) {
          throw fail(operation, "InvalidRequest", "give a thread or a turn, not both")
        }
        const lim = clampLimit(request.limit)
        const maxBytes = clampBytes(request.maxBytes)
        const scope = scopeOf(c, request.caller)
        const q = fingerprint("timeline", env, request.caller, request.thread, request.turn, request.descendants === true)
        const cursor = readCursor(c, operation, request.cursor, q)
        const after = cursor?.o ?? 0
        let rows: Array<RecordRow>
        if (request.turn !== undefined) {
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
        return {
          items,
          coverage: coverageOf(items, isVerifiedIn(c)),
          truncated: capped,
          nextCursor: (more || capped) && last !== undefined ? cursorAt(q, last) : null,
          caps: capsOf(request.limit, lim, maxBytes, capped)
        }
      })

    // ---------------------------------------------------------------------------- turn

    const turn = (request: TurnRequest): ViewEffect<TurnPage> =>
      runView("HistoryViews.turn", (c): TurnPage => {
        const operation = "HistoryViews.turn"
        checkCaller(operation, request.caller)
        const lim = clampLimit(request.limit)
        const maxBytes = clampBytes(request.maxBytes)
        const scope = scopeOf(c, request.caller)
        const q = fingerprint("turn", env, request.caller, request.turn)
        const cursor = readCursor(c, operation, request.cursor, q)
        // The high-water ordinal pins the aggregate: records committed later do not shift pages.
        const high = cursor?.o ?? c.get<{ readonly o: number }>(SQL.maxOrdinal, env)!.o
        const records = c.all<RecordRow>(SQL.turnRecords, env, request.turn, JSON.stringify(scope), high)
          .map((r) => decodeRow(operation, r))
        const net = netChanges(records)
        const lastPath = typeof cursor?.p === "string" ? cursor.p : undefined
        const rest = lastPath === undefined ? net : net.filter((n) => n.path > lastPath)
        const page = rest.slice(0, lim.limit)
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

    // ---------------------------------------------------------------------------- diff

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

    const diff = (request: DiffRequest): ViewEffect<DiffPage> =>
      runView("HistoryViews.diff", (c): DiffPage => {
        const operation = "HistoryViews.diff"
        checkCaller(operation, request.caller)
        const lim = clampLimit(request.limit)
        const maxBytes = clampBytes(request.maxBytes)
        const maxLines = request.maxLines === undefined || !Number.isFinite(request.maxLines)
          ? DEFAULT_DIFF_LINES
          : Math.min(MAX_DIFF_LINES, Math.max(1, Math.floor(request.maxLines)))
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
        const cursor = readCursor(c, operation, request.cursor, q)
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

    // ---------------------------------------------------------------------------- file

    /** The workspace-relative form of a requested path, or a refusal. */
    const relativePathOf = (operation: string, raw: string): RelativePath => {
      let p = raw
      if (typeof p !== "string" || p.length === 0) throw fail(operation, "PathRefused", "give a non-empty path")
      if (path.isAbsolute(p) || p.startsWith("/")) {
        if (root === undefined) throw fail(operation, "PathRefused", `${raw} is absolute; give a workspace-relative path`)
        const rel = path.relative(root, path.resolve(p))
        if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) {
          throw fail(operation, "PathRefused", `${raw} is outside the workspace; only paths inside it have history here`)
        }
        p = rel.split(path.sep).join("/")
      }
      if (p.split("/").includes("..")) {
        throw fail(operation, "PathRefused", `${raw} leaves (or may leave) the workspace through '..'; give the path as stored, without '..'`)
      }
      const decoded = Schema.decodeUnknownExit(RelativePath)(p)
      if (decoded._tag === "Failure") {
        throw fail(operation, "PathRefused", `${raw} is not a normalized workspace-relative path (POSIX '/', no '.', '..' or empty segments)`)
      }
      return decoded.value
    }

    interface Segment {
      readonly path: string
      readonly lo: number
      readonly hi: number
    }

    // Moves are followed whichever thread made them (a file's lineage is a workspace fact);
    // only the records shown are limited to the caller's scope.
    const segmentsOf = (c: Connection, start: string): { segs: Array<Segment>; capped: boolean } => {
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

    const file = (request: FileRequest): ViewEffect<FilePage> =>
      Effect.gen(function*() {
        const operation = "HistoryViews.file"
        const relative = yield* Effect.try({
          try: () => {
            checkCaller(operation, request.caller)
            return relativePathOf(operation, request.path)
          },
          catch: (e) => e as ViewError
        })
        if (root !== undefined && request.detectGaps !== false && request.cursor === undefined) {
          yield* detectGap(request.caller, request.turn ?? "history-view", relative)
        }
        return yield* runView(operation, (c): FilePage => {
          const lim = clampLimit(request.limit)
          const maxBytes = clampBytes(request.maxBytes)
          const scopeJson = JSON.stringify(scopeOf(c, request.caller))
          const q = fingerprint("file", env, request.caller, relative)
          const cursor = readCursor(c, operation, request.cursor, q)
          const after = cursor?.o ?? 0
          const { capped: segCapped, segs } = segmentsOf(c, relative)
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
            const row = c.get<RecordRow>(SQL.recordByOrdinal, env, r.commit_ordinal)!
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
              change
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
          return {
            items,
            coverage: coverageOf(records, isVerifiedIn(c)),
            truncated: capped || segCapped,
            nextCursor: (more || capped) && lastRecord !== undefined ? cursorAt(q, lastRecord) : null,
            caps: capsOf(request.limit, lim, maxBytes, capped)
          }
        })
      })

    // ---------------------------------------------------------------------------- gaps

    /** What history says is at `p` now: a snapshot, `absent`, or `unknown` (no after recorded). */
    const expectedAt = (c: Connection, p: string): { ordinal: number; state: Snapshot | "absent" | "unknown" } | undefined => {
      const at = c.get<{ readonly commit_ordinal: number }>(SQL.lastAt, env, p)
      const out = c.get<{ readonly commit_ordinal: number }>(SQL.lastMovedOut, env, p)
      if (at === undefined && out === undefined) return undefined
      if (out !== undefined && (at === undefined || out.commit_ordinal > at.commit_ordinal)) {
        return { ordinal: out.commit_ordinal, state: "absent" }
      }
      const row = c.get<RecordRow>(SQL.recordByOrdinal, env, at!.commit_ordinal)!
      const record = decodeRow("HistoryViews.gap", row)
      // A verification record only describes; fall back to what it verified only when it has an after.
      const change = record.changes.find((ch) => ch.path === p)!
      if (change.kind === "delete") return { ordinal: at!.commit_ordinal, state: "absent" }
      return { ordinal: at!.commit_ordinal, state: change.after ?? "unknown" }
    }

    /** The file at `p` on disk (never following a symlink out of the root), or `absent`. */
    const readDisk = (p: string): { bytes: Uint8Array; mode: number } | "absent" | "unreadable" => {
      const abs = path.join(root!, ...p.split("/"))
      let st: fs.Stats
      try {
        st = fs.lstatSync(abs)
      } catch {
        return "absent"
      }
      if (!st.isFile()) return "unreadable"
      try {
        const real = fs.realpathSync(abs)
        const rel = path.relative(root!, real)
        if (rel.startsWith("..") || path.isAbsolute(rel)) return "unreadable"
        return { bytes: fs.readFileSync(real) as Uint8Array, mode: st.mode & 0o7777 }
      } catch {
        return "unreadable"
      }
    }

    const snapshotOfBytes = (bytes: Uint8Array, mode: number): Snapshot => {
      const info = describeText(bytes)
      return {
        hash: sha256(bytes),
        bytes: bytes.byteLength,
        encoding: info.encoding,
        lineEnding: info.lineEnding,
        finalNewline: info.finalNewline,
        mode
      } as Snapshot
    }

    const intentTouches = (c: Connection, p: string): boolean =>
      c.all<{ readonly intent_json: string }>(SQL.openIntents, env).some((row) => {
        try {
          const parsed = JSON.parse(row.intent_json) as { entries?: Array<{ path?: string }> }
          return parsed.entries?.some((e) => e.path === p) ?? true
        } catch {
          return true
        }
      })

    const detectGap = (caller: string, turnId: string, p: RelativePath): Effect.Effect<void, StoreError> =>
      Effect.gen(function*() {
        const operation = "HistoryViews.detectGap"
        const first = yield* sql.run(operation, (c) => expectedAt(c, p))
        if (first === undefined || first.state === "unknown") return
        const disk = readDisk(p)
        if (disk === "unreadable") return
        const diskHash = disk === "absent" ? "absent" : sha256(disk.bytes)
        const expectedHash = first.state === "absent" ? "absent" : first.state.hash
        if (diskHash === expectedHash) return
        const now = yield* Clock.currentTimeMillis
        const before = first.state === "absent" ? undefined : first.state
        const after = disk === "absent" ? undefined : snapshotOfBytes(disk.bytes, disk.mode)
        const change: FileChange = before === undefined
          ? { kind: "add", path: p, after: after! }
          : after === undefined
          ? { kind: "delete", path: p, before }
          : { kind: "replace", path: p, before, after }
        const id = randomUUID()
        const draft = Schema.decodeUnknownSync(RecordDraft)({
          recordId: `rec-gap-${id}`,
          threadId: caller,
          turnId,
          invocationId: `gap-${id}`,
          environmentId: env,
          transactionId: `gap:${id}`,
          authority: "unsupported",
          provenance: "unknown",
          exactness: "partial",
          outcome: "gap",
          changes: [change],
          directoryEffects: [],
          warnings: [{
            code: "unrecorded_change",
            message: `${p} differs from its last recorded content and no forkjoin intent explains it (edited outside forkjoin)`,
            path: p
          }],
          links: {}
        })
        const prepared = prepareRecordSync(operation, draft, now)
        yield* sql.transaction(operation, (c) => {
          // Re-check under the write lock: another viewer may have recorded the gap meanwhile,
          // or an engine may have journaled a write that explains it.
          const again = expectedAt(c, p)
          if (again === undefined || again.ordinal !== first.ordinal || intentTouches(c, p)) return
          if (disk !== "absent") insertBlobs(c, [disk.bytes])
          insertRecord(c, prepared, null)
        })
      })

    return HistoryViews.of({ timeline, turn, diff, file })
  })
