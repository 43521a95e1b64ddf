/**
 * The history views (SPEC §4.4): `timeline` (a thread's or a turn's records in commit
 * order), `turn` (a turn's per-path net changes, moves followed), `diff` (one record, or every
 * record of a transaction, as bounded unified diffs from the blobs) and `file` (one path
 * across the caller's thread and its descendants, following moves both ways), and `threads`
 * (the threads in scope with their record counts: where the records are). Every response
 * is a page with `coverage`, `truncated`, an opaque `nextCursor` and the `caps` in force.
 *
 * Scope: every request names the caller's thread; it sees that thread and its registered
 * descendants (`HistoryStore.registerThread`), nothing else, unless the request says
 * `everyThread` (the workspace's own user, never a token's caller): then every thread. Paths are workspace-relative
 * (`..` pops a segment); a path outside the workspace is refused, never mapped into it. With
 * a workspace `root`, `file` first asks gap detection (`Gaps.ts`) to compare the file on disk
 * with its last recorded content and reports a difference as an unrecorded change. Views
 * never write: the next write or merge of the path records the gap.
 *
 * It owns the service and its layers; each view, the paging, the SQL and the pure folds live
 * in `internal/`, the requests in `ViewRequests.ts`, the error in `ViewError.ts` (all
 * re-exported here). It writes nothing (records are the store's, the engine's, `Gaps`' and
 * `ProviderAggregates`') and does not own rendering for humans (the CLI).
 *
 * @since 0.1.0
 */
import type { DiffPage, FilePage, TimelinePage, TurnPage } from "@forkjoin/schema"
import type { ThreadsPage } from "@forkjoin/schema/WorkspaceIndex"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import { findGap, unrecordedChangeOf } from "./Gaps.ts"
import type { HistoryServices, StoreError } from "./HistoryStore.ts"
import { layerNoDeps as storeLayerNoDeps, sqliteOptions } from "./HistoryStoreSqlite.ts"
import { diffView } from "./internal/diffView.ts"
import { fileView, type GapCheck } from "./internal/fileView.ts"
import { threadsView } from "./internal/threadsView.ts"
import { timelineView } from "./internal/timelineView.ts"
import { turnView } from "./internal/turnView.ts"
import type { ViewContext, ViewEffect } from "./internal/viewContext.ts"
import { Sqlite, type SqliteOptions } from "./Sqlite.ts"
import type { DiffRequest, FileRequest, ThreadsRequest, TimelineRequest, TurnRequest, ViewsConfig } from "./ViewRequests.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

export {
  /**
   * Counts the certainty labels of some records: exactness, gaps, provider aggregates and
   * how many of those have an exact verification record.
   *
   * @category combinators
   * @since 0.1.0
   */
  coverageOf
} from "./internal/coverage.ts"

export {
  /**
   * Combines records (in commit order) into per-path net changes, following moves.
   *
   * @category combinators
   * @since 0.1.0
   */
  netChanges
} from "./internal/netChanges.ts"

export {
  /**
   * Why a view refused a request (see `ViewError.ts`).
   *
   * @category errors
   * @since 0.1.0
   */
  ViewError
} from "./ViewError.ts"

export type {
  /**
   * The requests and configuration of the views (see `ViewRequests.ts`).
   *
   * @category models
   * @since 0.1.0
   */
  DiffRequest,
  FileRequest,
  PageOptions,
  ThreadsRequest,
  TimelineRequest,
  TurnRequest,
  ViewsConfig
} from "./ViewRequests.ts"

// -------------------------------------------------------------------------------------
// service
// -------------------------------------------------------------------------------------

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
  /** The changes of one record (by id or `#N`) or of a transaction's records, as bounded unified diffs. */
  readonly diff: (request: DiffRequest) => ViewEffect<DiffPage>
  /** One path's history across the caller's thread and descendants, moves followed both ways. */
  readonly file: (request: FileRequest) => ViewEffect<FilePage>
  /** The threads in scope, by id, with their parents and record counts: where the records are. */
  readonly threads: (request: ThreadsRequest) => ViewEffect<ThreadsPage>
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
  ): Layer.Layer<HistoryViews | HistoryServices | Sqlite, StoreError> =>
    Layer.mergeAll(HistoryViews.layerNoDeps(config), storeLayerNoDeps).pipe(
      Layer.provideMerge(Sqlite.layer(file, sqliteOptions(options)))
    )
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
    const root = config.root === undefined ? undefined : fs.realpathSync(config.root)
    const ctx: ViewContext = { sql, env: config.environmentId, root }
    // Read-only: views report what differs on disk, the next write or merge records it.
    const gapCheck: GapCheck = (path) =>
      root === undefined
        ? Effect.succeed(undefined)
        : findGap({ environmentId: config.environmentId, root }, { path }).pipe(
          Effect.map((gap) => (gap === undefined ? undefined : unrecordedChangeOf(gap))),
          Effect.provideService(Sqlite, sql)
        )
    return HistoryViews.of({
      timeline: timelineView(ctx),
      turn: turnView(ctx),
      diff: diffView(ctx),
      file: fileView(ctx, gapCheck),
      threads: threadsView(ctx)
    })
  })
