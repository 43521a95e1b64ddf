/**
 * Garbage collection of run artifacts (`forkjoin gc`, issue 9 item 7): removes the folders
 * below `<workspace>/.forkjoin/runs/` of runs that are over (merge run `applied`, `partial` or
 * `failed`, or an export-only run that never had a merge run) and older than a limit, and
 * never what a join can still read: a `running` run (`forkjoin run --resume` rereads its
 * children's changesets and blobs), a `blocked` run or any run with an open conflict
 * (resolving its last conflict applies the rest of the child from its folder), and never a run
 * a process is running or resuming right now, whatever its age or status: gc takes the run's
 * lock (`internal/runLock.ts`) before deciding and holds it while it removes the folder, so a
 * live run is kept (`live`) and a run cannot start resuming under a removal. An agent session's
 * folder (`agent-…`, `mcp-…`) is judged the same way under the session's lock, which its
 * process holds while it runs (`AgentSessions.live`); while a session is live, the runs it
 * started are kept too (`live_session`: its record names them, or they are runs of its thread
 * created since it started), since it may still act on them and its report points into them.
 *
 * Optionally (off unless asked), snapshot retention: the history store drops the
 * content of snapshots that only records older than a limit use (`HistoryStore.pruneSnapshots`),
 * never what an unfinished join or an open conflict may read: the limit moves back to the start
 * of the oldest `running` or `blocked` run (a child's preimage is then the content of a newer
 * record, or the latest content, which are kept), and open conflicts' sides are kept.
 *
 * Owns deciding which run folders may go (`verdictOf`, pure) and removing them, and what
 * retention must keep for the joins. Does not own the records: merge runs, conflicts and
 * history records stay in the database, nor which snapshots records need (the history store),
 * nor the blobs a child leaves when it exports nothing (`@forkjoin/runtime/Children` drops
 * those as the child ends).
 *
 * @since 0.1.0
 */
import { Engine } from "@forkjoin/engine/Engine"
import { HistoryContent, RetentionReport } from "@forkjoin/history/HistoryStore"
import { MergeStore } from "@forkjoin/history/MergeStore"
import { errnoOf } from "@forkjoin/patch/SystemError"
import { type MergeRun, MergeRunId } from "@forkjoin/schema"
import type { AgentSessionRecord } from "@forkjoin/schema/WorkspaceIndex"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as AgentSessions from "./AgentSessions.ts"
import * as RunLock from "./internal/runLock.ts"
import { OrchestratorError, storeFailure } from "./OrchestratorError.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * Why a run's folder was kept: a process is running or resuming it (or runs that agent
 * session) now (`live`), an agent session that started it is still running (`live_session`),
 * its join is unfinished (`running`: interrupted), held by open conflicts (`blocked`, or
 * `open_conflicts` whatever the run's status says), or it is younger than the limit (`recent`).
 *
 * @category models
 * @since 0.1.0
 */
export const KeepReason = Schema.Literals(["live", "live_session", "running", "blocked", "open_conflicts", "recent"])

/**
 * @category models
 * @since 0.1.0
 */
export type KeepReason = typeof KeepReason.Type

/**
 * A removed run folder and the bytes it held (sizes of its files and links).
 *
 * @category models
 * @since 0.1.0
 */
export const RemovedRun = Schema.Struct({ runId: Schema.String, bytes: Schema.Number })

/**
 * @category models
 * @since 0.1.0
 */
export type RemovedRun = typeof RemovedRun.Type

/**
 * A run folder gc left in place, and why.
 *
 * @category models
 * @since 0.1.0
 */
export const KeptRun = Schema.Struct({ runId: Schema.String, reason: KeepReason })

/**
 * @category models
 * @since 0.1.0
 */
export type KeptRun = typeof KeptRun.Type

/**
 * What one gc did, each list by run id, and what snapshot retention did when it was asked for.
 *
 * @category models
 * @since 0.1.0
 */
export const GcReport = Schema.Struct({
  removed: Schema.Array(RemovedRun),
  kept: Schema.Array(KeptRun),
  snapshots: Schema.optionalKey(RetentionReport)
})

/**
 * @category models
 * @since 0.1.0
 */
export type GcReport = typeof GcReport.Type

/**
 * What gc knows of one run folder: its merge run (none for an export-only run, or one whose
 * children have not finished yet), how many of its conflicts are open, and when anything
 * below the folder was last written (epoch milliseconds), and whether a process holds the
 * run's lock (it is running or resuming it now).
 *
 * @category models
 * @since 0.1.0
 */
export interface RunFolderState {
  readonly run: MergeRun | undefined
  readonly openConflicts: number
  readonly lastWrittenMillis: number
  readonly live?: boolean | undefined
  /** A live agent session started the run. */
  readonly liveSession?: boolean | undefined
}

/**
 * Whether a run folder goes, or stays and why.
 *
 * @category models
 * @since 0.1.0
 */
export type Verdict = { readonly _tag: "Remove" } | { readonly _tag: "Keep"; readonly reason: KeepReason }

/**
 * Options of `gc`: the age below which a finished run is kept (a run's age is the time since
 * its merge run's `updatedAt`, or for a run without one since its folder was last written),
 * and, only when given, the age past which records no longer keep their snapshots' content.
 *
 * @category models
 * @since 0.1.0
 */
export interface GcOptions {
  readonly olderThan: Duration.Duration
  readonly pruneSnapshotsOlderThan?: Duration.Duration | undefined
}

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

/**
 * The folder holding a workspace's run folders: `<root>/.forkjoin/runs`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runsDirectoryOf = (root: string): string => path.join(root, ".forkjoin", "runs")

/**
 * The verdict on one run folder at `nowMillis` (pure). A live run, open conflicts and
 * unfinished joins keep a folder whatever its age; a finished or export-only run goes once it is at least
 * `olderThanMillis` old.
 *
 * @category constructors
 * @since 0.1.0
 */
export const verdictOf = (state: RunFolderState, nowMillis: number, olderThanMillis: number): Verdict => {
  if (state.live === true) return { _tag: "Keep", reason: "live" }
  if (state.liveSession === true) return { _tag: "Keep", reason: "live_session" }
  if (state.run?.status === "running") return { _tag: "Keep", reason: "running" }
  if (state.run?.status === "blocked") return { _tag: "Keep", reason: "blocked" }
  if (state.openConflicts > 0) return { _tag: "Keep", reason: "open_conflicts" }
  const lastActive = state.run === undefined ? state.lastWrittenMillis : Date.parse(state.run.updatedAt)
  return nowMillis - lastActive >= olderThanMillis ? { _tag: "Remove" } : { _tag: "Keep", reason: "recent" }
}

/**
 * Which runs the workspace's live agent sessions started: those their records name (an MCP
 * session lists its runs as it starts them) and runs of a live session's thread created since
 * it started (a `forkjoin agent` lists its runs only when it ends). Asked once, before the
 * folders are judged; a session that starts later starts its runs later, each live by its own lock.
 */
const liveSessionRuns = (root: string) =>
  Effect.gen(function*() {
    const sessions: Array<AgentSessionRecord> = []
    for (const agentId of yield* AgentSessions.listIds(root)) {
      if (!(yield* AgentSessions.isLive(agentId))) continue
      const record = yield* AgentSessions.readRecord(root, agentId)
      if (record !== undefined) sessions.push(record)
    }
    return (runId: string, run: MergeRun | undefined): boolean =>
      sessions.some((s) =>
        s.runIds.includes(MergeRunId.make(runId)) ||
        (run !== undefined && run.callerThreadId === s.threadId && Date.parse(run.createdAt) >= Date.parse(s.startedAt))
      )
  })

/** The name a folder takes while it is being removed; a leftover is removed by the next gc. */
const REMOVING = ".gc-"

const isRunId = Schema.is(MergeRunId)

const artifactFailure = (what: string, file: string) => (cause: unknown) =>
  new OrchestratorError({
    code: "artifacts_unavailable",
    paths: [],
    message: `${what} ${file} failed (${cause instanceof Error ? cause.message : String(cause)}); ` +
      "check the permissions of the workspace's .forkjoin/runs folder, then run gc again.",
    cause
  })

/** Every entry below `dir` (links not followed): the bytes of its non-folders and its newest mtime. */
const measure = (dir: string): { readonly bytes: number; readonly newestMillis: number } => {
  let bytes = 0
  let newestMillis = fs.lstatSync(dir).mtimeMs
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const abs = path.join(dir, entry.name)
    if (entry.isDirectory()) {
      const inner = measure(abs)
      bytes += inner.bytes
      newestMillis = Math.max(newestMillis, inner.newestMillis)
    } else {
      const st = fs.lstatSync(abs)
      bytes += st.size
      newestMillis = Math.max(newestMillis, st.mtimeMs)
    }
  }
  return { bytes, newestMillis }
}

/**
 * The run folders (real folders, links never followed) and the leftovers of an interrupted
 * gc. A missing runs folder is an empty list; a runs folder that is a link or a file is
 * refused, so nothing is ever removed outside the workspace.
 */
const listFolders = (runsDir: string) =>
  Effect.try({
    try: () => {
      // The state folder and the runs folder are both checked: a link at either would lead outside.
      for (const dir of [path.dirname(runsDir), runsDir]) {
        let st: fs.Stats
        try {
          st = fs.lstatSync(dir)
        } catch (e) {
          if (errnoOf(e) === "ENOENT") return { runs: [], leftovers: [] }
          throw e
        }
        if (!st.isDirectory()) throw new Error(`${dir} is not a folder (gc never follows a link)`)
      }
      const entries = fs.readdirSync(runsDir, { withFileTypes: true }).filter((e) => e.isDirectory())
      return {
        runs: entries.map((e) => e.name).filter((n) => !n.startsWith(".") && isRunId(n)).sort(),
        leftovers: entries.map((e) => e.name).filter((n) => n.startsWith(REMOVING)).sort()
      }
    },
    catch: artifactFailure("Listing", runsDir)
  })

/** Measures then removes one folder: renamed aside first, so a crash never leaves half a run under its own name. */
const remove = (runsDir: string, name: string, runId: string) =>
  Effect.try({
    try: (): RemovedRun => {
      const from = path.join(runsDir, name)
      const { bytes } = measure(from)
      const aside = name.startsWith(REMOVING) ? from : path.join(runsDir, `${REMOVING}${runId}.${randomUUID()}`)
      if (aside !== from) fs.renameSync(from, aside)
      fs.rmSync(aside, { recursive: true, force: true })
      return { runId, bytes }
    },
    catch: artifactFailure("Removing", path.join(runsDir, name))
  })

/** The run id a leftover of an interrupted removal belonged to. */
const runIdOfLeftover = (name: string): string => {
  const rest = name.slice(REMOVING.length)
  const dot = rest.lastIndexOf(".")
  return dot > 0 ? rest.slice(0, dot) : rest
}

const byRunId = (a: { readonly runId: string }, b: { readonly runId: string }) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0)

/**
 * Removes the workspace's finished run folders at least `olderThan` old and reports what it
 * removed (with the bytes freed) and what it kept (with the reason). A run a process is
 * running or resuming, a folder whose merge run is `running` or `blocked`, or that has an open
 * conflict, is never removed. The merge runs
 * and conflicts stay in the history database. With `pruneSnapshotsOlderThan`, then prunes the
 * snapshots only older records use (see the module comment) and reports it as `snapshots`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const gc = Effect.fn("Gc.gc")(function*(options: GcOptions) {
  const engine = yield* Engine
  const store = yield* MergeStore
  const runsDir = runsDirectoryOf(engine.root)
  const { runs: names, leftovers } = yield* listFolders(runsDir)
  const now = yield* Clock.currentTimeMillis
  const olderThanMillis = Duration.toMillis(options.olderThan)

  // A run is matched to its folder by the folder it recorded, or by its id.
  const recorded = yield* store.listRuns({ environmentId: engine.environmentId }).pipe(Effect.mapError(storeFailure("Listing the merge runs")))
  const byDirectory = new Map(recorded.map((r) => [path.resolve(r.runDirectory), r]))
  const byId = new Map(recorded.map((r) => [r.runId as string, r]))
  const open = yield* store.listConflicts({ environmentId: engine.environmentId, status: "open" }).pipe(
    Effect.mapError(storeFailure("Listing the open conflicts"))
  )
  const startedByLive = yield* liveSessionRuns(engine.root)

  const removed: Array<RemovedRun> = []
  const kept: Array<KeptRun> = []
  for (const name of names) {
    const folder = path.join(runsDir, name)
    const listed = byDirectory.get(path.resolve(folder)) ?? byId.get(name)
    const runId = listed?.runId ?? name
    // Decided and removed under the run's lock, from the run as it is now (it may have ended
    // since the listing): a run a process holds is kept, and none starts under the removal.
    const decided = yield* RunLock.ifIdle(
      runId,
      Effect.gen(function*() {
        const found = yield* store.getRun(MergeRunId.make(runId)).pipe(Effect.mapError(storeFailure("Reading a merge run")))
        const run = Option.getOrUndefined(found)
        const openConflicts = run === undefined ? 0 : (yield* store.listConflicts({ environmentId: run.environmentId, runId: run.runId, status: "open" }).pipe(
          Effect.mapError(storeFailure("Listing a run's open conflicts"))
        )).length
        // A recorded run is dated by its merge run; only a run without one is dated by its files.
        const lastWrittenMillis = run !== undefined ? 0 : yield* Effect.try({
          try: () => measure(folder).newestMillis,
          catch: artifactFailure("Reading", folder)
        })
        const liveSession = startedByLive(runId, run)
        const verdict = verdictOf({ run, openConflicts, lastWrittenMillis, liveSession }, now, olderThanMillis)
        if (verdict._tag === "Keep") return { kept: { runId: name, reason: verdict.reason } } as const
        const gone = yield* remove(runsDir, name, name)
        // Nothing can run it again now: its lock file goes with it.
        yield* RunLock.forget(runId)
        return { removed: gone } as const
      })
    )
    if (Option.isNone(decided)) kept.push({ runId: name, reason: "live" })
    else if ("kept" in decided.value) kept.push(decided.value.kept)
    else removed.push(decided.value.removed)
  }
  for (const name of leftovers) removed.push(yield* remove(runsDir, name, runIdOfLeftover(name)))
  const report = { removed: removed.sort(byRunId), kept: kept.sort(byRunId) } satisfies GcReport
  if (options.pruneSnapshotsOlderThan === undefined) return report
  const history = yield* HistoryContent
  // An unfinished join may still read its children's preimages: the content at fork time,
  // which is the latest content or the `before` of a record committed since the fork.
  const unfinished = recorded.filter((r) => r.status === "running" || r.status === "blocked").map((r) => Date.parse(r.createdAt))
  const committedBefore = Math.min(now - Duration.toMillis(options.pruneSnapshotsOlderThan), ...unfinished)
  const keep = open.flatMap((c) => [c.base, c.ours, c.theirs].flatMap((s) => (s === undefined ? [] : [s.hash])))
  const snapshots = yield* history.pruneSnapshots({ committedBefore, keep }).pipe(
    Effect.mapError(storeFailure("Pruning old snapshots"))
  )
  return { ...report, snapshots } satisfies GcReport
})
