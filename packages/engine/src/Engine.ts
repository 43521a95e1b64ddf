/**
 * The native patch engine (SPEC §3): the one code path that writes to a workspace. Patches,
 * changeset merges, rollbacks and conflict resolutions all become a plan and go through the
 * same ten stages — normalize, parse, resolve, authorize, plan, lock, stage, commit, persist,
 * publish — so every write is atomic, path-safe, journaled and recorded exactly once.
 * This module owns the public models, the `Engine` service and its assembly; each stage is a
 * module under `internal/`. Record storage is `HistoryStore`; patch semantics are `@forkjoin/patch`.
 *
 * @since 0.1.0
 */
import { type HistoryReset, HistoryStore, type StoreError } from "@forkjoin/history/HistoryStore"
import type { FileState, Plan, Profile } from "@forkjoin/patch"
import type { SnapshotFacts } from "@forkjoin/patch/Snapshot"
import { errnoOf } from "@forkjoin/patch/SystemError"
import {
  type Authority,
  type EnvironmentId,
  type InvocationId,
  type PatchHistoryRecord,
  type Provenance,
  type RecordLinks,
  type ThreadId,
  type TransactionId,
  type TurnId
} from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Grant } from "./Grant.ts"
import * as Fault from "./Fault.ts"
import { type ApplyDeps, applyPatch, applyPlan } from "./internal/apply.ts"
import { inspectionOf } from "./internal/inspect.ts"
import { WorkspaceLock } from "./internal/lock.ts"
import { probeFilesystem } from "./internal/probe.ts"
import { bindHistory, workspaceIdentity, workspaceIdentityAt } from "./internal/identity.ts"
import { type RepairReport, repairIntents, type UncertainOutcome, uncertainOutcomeOf } from "./internal/repair.ts"
import { type ResolveContext, resolveTargets, resolvingEach } from "./internal/resolve.ts"
import { runWithTurns } from "./internal/turns.ts"
import { toEngineError } from "./internal/toEngineError.ts"
import { fromStoreError } from "./HistoryFailure.ts"
import { compileGlob, DEFAULT_DENIED_GLOBS, openStateDirectory } from "./Policy.ts"
import { CurrentListener, type ProgressListener } from "./Progress.ts"

export { type Grant, Grants } from "./Grant.ts"
export { RepairOutcome, RepairReport, UncertainOutcome } from "./internal/repair.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * Per-request input limits (stage 1, `input_too_large`).
 *
 * @category models
 * @since 0.1.0
 */
export interface Limits {
  readonly maxPatchBytes: number
  readonly maxFiles: number
  readonly maxFileBytes: number
}

/**
 * Per-turn and per-workspace write budgets over recorded history (stage 5, `budget_exceeded`).
 *
 * @category models
 * @since 0.1.0
 */
export interface Budgets {
  readonly turnBytes?: number
  readonly turnFiles?: number
  readonly workspaceBytes?: number
  readonly workspaceFiles?: number
}

/**
 * How an engine is bound to one workspace.
 *
 * @category models
 * @since 0.1.0
 */
export interface EngineConfig {
  /** The workspace root directory. */
  readonly root: string
  /** Extra absolute directories that in-workspace symlinks may lead into. */
  readonly allowedRoots?: ReadonlyArray<string>
  /** Relative globs a request may never touch. Default: any `.git/` or `.forkjoin/` folder, at any depth. */
  readonly deniedGlobs?: ReadonlyArray<string>
  /** Fold letter case for path identity; default: probed on the workspace filesystem. */
  readonly caseInsensitive?: boolean
  readonly lockTimeoutMs?: number
  readonly limits?: Partial<Limits>
  readonly budgets?: Budgets
  /** Run startup repair when the engine is built (default true). */
  readonly repairOnStart?: boolean
  /**
   * Adopt the history database even when it is not the history the workspace remembers
   * (missing, emptied, another one, an older copy), recording the reset; default false, which
   * refuses such a database with `history_missing` (`forkjoin repair --reset-history`).
   */
  readonly resetHistory?: boolean
}

/**
 * The execution a request belongs to, its permissions and its optional guards.
 *
 * @category models
 * @since 0.1.0
 */
export interface RequestContext {
  readonly threadId: ThreadId
  readonly turnId: TurnId
  readonly invocationId?: InvocationId
  /** Default `patch:<uuid>`. */
  readonly transactionId?: TransactionId
  /** Default write + create-dirs, no overwrite. */
  readonly grant?: Grant
  /** Version guards: the request fails unless each path currently hashes to the value (`sha256:<hex>`, or `null` for absent). */
  readonly expect?: Readonly<Record<string, string | null>>
  /**
   * Where the request may write (normalized relative files or folders). Every path it writes,
   * deletes or moves from or to must land, links followed inside the workspace, at the path it
   * names and inside one entry; checked at stage 4 and again under the workspace lock (stage 6),
   * so a link swapped in after the caller resolved its paths fails the request with
   * `path_outside_scope` or `path_redirected`, nothing written. Default: no scope check.
   */
  readonly writeScope?: ReadonlyArray<string>
  readonly authority?: Authority
  readonly provenance?: Provenance
  readonly links?: RecordLinks
  /** Per-request limit overrides. */
  readonly limits?: Partial<Limits>
  /** Receives this request's progress events; default: the fiber's `Progress.CurrentListener`. */
  readonly onProgress?: ProgressListener
}

/**
 * An `apply_patch` request.
 *
 * @category models
 * @since 0.1.0
 */
export interface PatchRequest extends RequestContext {
  readonly patch: string
  readonly profile?: Profile
  readonly preserveLineEndings?: boolean
}

/**
 * A precomputed plan (changeset merge, rollback, conflict resolution): each file's `before`
 * must still be the live content at lock time (`undefined` = absent), else `stale_file`.
 *
 * @category models
 * @since 0.1.0
 */
export interface PlanRequest<E = never, R = never> extends RequestContext {
  readonly plan: Plan
  /** The caller's own steps inside the locked section (see `LockedSteps`). */
  readonly locked?: LockedSteps<E, R>
}

/**
 * A caller's steps inside the engine's locked section of one plan request: what it decides and
 * records there is one step with the write for every process that decides under the workspace
 * lock too (`Engine.locked`). Both run uninterruptibly, holding the lock.
 *
 * @category models
 * @since 0.1.0
 */
export interface LockedSteps<E, R = never> {
  /** At stage 6, as soon as the lock is held and before the plan is re-checked: a failure fails the request with nothing written. */
  readonly before?: Effect.Effect<unknown, E, R>
  /** After the record committed and was published, before the lock is released: a failure fails the request, whose record stays. */
  readonly after?: (record: PatchHistoryRecord) => Effect.Effect<unknown, E, R>
}

/**
 * Published after every applied record (stage 10).
 *
 * @category models
 * @since 0.1.0
 */
export interface HistoryEvent {
  readonly _tag: "Applied"
  readonly record: PatchHistoryRecord
}

/**
 * What the resolver found at one path (`Engine.inspect`).
 *
 * @category models
 * @since 0.1.0
 */
export interface Inspection {
  /** The normalized relative path asked for. */
  readonly path: string
  /** File (with bytes) | Missing | Directory | Other, as `read` returns. */
  readonly state: FileState
  /** Permission bits of an existing regular file, else undefined. */
  readonly mode: number | undefined
  /** Workspace-relative POSIX path where a write to `path` would land after following in-workspace symlinks on the way (equal to `path` when there are none); undefined when it lands outside the workspace (in an allowed root). */
  readonly landing: string | undefined
  /** Snapshot facts of a File (hash, size, encoding, line ending, final newline), computed on first access and memoized; undefined for non-files. Must cost nothing unless read. */
  readonly facts: SnapshotFacts | undefined
}

/**
 * The engine service of one workspace.
 *
 * @category services
 * @since 0.1.0
 */
export class Engine extends Context.Service<Engine, {
  readonly root: string
  readonly environmentId: EnvironmentId
  /** Applies an apply_patch text all-or-nothing and returns its record. */
  readonly applyPatch: (request: PatchRequest) => Effect.Effect<PatchHistoryRecord, EngineError>
  /** Applies a precomputed plan all-or-nothing and returns its record. */
  readonly applyPlan: <E = never, R = never>(request: PlanRequest<E, R>) => Effect.Effect<PatchHistoryRecord, EngineError | E, R>
  /**
   * Runs `effect` holding the workspace lock, as a write does (`lock_timeout` likewise): no
   * write of this workspace, in any process, runs meanwhile. Never call a write of this engine
   * inside it: it would wait for itself.
   */
  readonly locked: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | EngineError, R>
  /** Startup repair (SPEC §4.5) of intents left open by crashed processes. */
  readonly repair: Effect.Effect<RepairReport, EngineError>
  /** What the startup repair did when this engine was built (no outcomes when it was off). */
  readonly startupRepair: RepairReport
  /** The reset this engine's open made (only with `resetHistory`, when the database needed one). */
  readonly historyReset: HistoryReset | undefined
  /** Every recorded reset of this workspace's history in this database, oldest first. */
  readonly historyResets: Effect.Effect<ReadonlyArray<HistoryReset>, EngineError>
  /** The `commit_state_uncertain` outcomes nobody acknowledged yet, in commit order. */
  readonly uncertainOutcomes: Effect.Effect<ReadonlyArray<UncertainOutcome>, EngineError>
  /**
   * Durably acknowledges the uncertain outcome with record id or transaction id `id` (its files
   * were checked); acknowledging again is a no-op. An unknown id is `request_invalid`.
   */
  readonly acknowledge: (id: string) => Effect.Effect<UncertainOutcome, EngineError>
  /** Reads the live state of workspace-relative paths (resolution rules apply); fails on the first bad path. */
  readonly read: (paths: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, FileState>, EngineError>
  /**
   * Resolves each path like `read`, keeping each path's own problem as its `Result.fail`; the
   * call fails only when two paths name the same file.
   */
  readonly inspect: (
    paths: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyMap<string, Result.Result<Inspection, EngineError>>, EngineError>
  /** Applied-record events. */
  readonly events: PubSub.PubSub<HistoryEvent>
}>()("forkjoin/engine/Engine") {
  /**
   * The engine over a `HistoryStore`: checks that the database is the history the workspace
   * remembers (`history_missing` otherwise), then runs startup repair unless disabled.
   */
  static readonly layer = (config: EngineConfig): Layer.Layer<Engine, EngineError, HistoryStore> =>
    Layer.effect(Engine, make(config))
}

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

/**
 * The environment id of the workspace at a real path: the one its `.forkjoin/identity.json`
 * keeps (so it survives a move; a move or copy is recorded there), else derived from the path.
 *
 * @category constructors
 * @since 0.1.0
 */
export const environmentIdOf = (realRoot: string): EnvironmentId => workspaceIdentityAt(realRoot).environmentId

/** The workspace's real path; a missing or unreadable root is `path_invalid`. */
const openRoot = (root: string): Effect.Effect<string, EngineError> =>
  Effect.try({
    try: () => fs.realpathSync(root),
    catch: (e) =>
      new EngineError({
        code: "path_invalid",
        stage: Stage.resolve,
        paths: [],
        message: `Workspace '${root}' cannot be opened (${errnoOf(e) ?? String(e)}); pass an existing directory.`,
        cause: e
      })
  })

/** What resolution knows of the workspace: real paths of the roots, compiled denied globs. */
const resolveContextOf = (root: string, config: EngineConfig, caseInsensitive: boolean): ResolveContext => ({
  root,
  allowedRoots: (config.allowedRoots ?? []).map((r) => {
    try {
      return fs.realpathSync(r)
    } catch {
      return path.resolve(r)
    }
  }),
  denied: (config.deniedGlobs ?? DEFAULT_DENIED_GLOBS).map((glob) => ({ glob, re: compileGlob(glob, caseInsensitive) })),
  caseInsensitive
})

const make = (config: EngineConfig) =>
  Effect.gen(function*() {
    const store = yield* HistoryStore
    const root = yield* openRoot(config.root)
    // A real folder inside the workspace, never followed through a link (else a typed refusal).
    const stateDir = yield* Effect.fromResult(openStateDirectory(root))
    const probed = probeFilesystem(stateDir)
    const ctx = resolveContextOf(root, config, config.caseInsensitive ?? probed.caseInsensitive)
    const identity = workspaceIdentity(stateDir, root)
    if (identity instanceof EngineError) return yield* identity
    const environmentId = identity.environmentId
    // Open for the engine's lifetime; a lock file SQLite cannot open is a bug, as it was.
    const lock = yield* Effect.orDie(WorkspaceLock.open(path.join(stateDir, "lock.db")))
    const events = yield* PubSub.unbounded<HistoryEvent>()
    // The faults of the program that built the engine: a request may run in a fiber of its own
    // (the gateway's fast apply runs on the services alone), whose context has none.
    const faults = yield* Fault.Faults
    const deps: ApplyDeps = {
      store,
      events,
      ctx,
      environmentId,
      newFileMode: probed.newFileMode,
      config,
      lock,
      lockTimeoutMs: config.lockTimeoutMs ?? 10_000
    }

    const read = (rels: ReadonlyArray<string>) =>
      Effect.try({ try: () => resolveTargets(ctx, rels), catch: (e) => toEngineError(e, Stage.resolve, rels) }).pipe(
        Effect.map((ts) => new Map(ts.map((t) => [t.path, t.state] as const)))
      )

    // Pausing: a child's 5,000-file patch inspects as many paths, and its timeout (a timer) must
    // be able to end it meanwhile.
    const inspect = (rels: ReadonlyArray<string>) =>
      runWithTurns(() => resolvingEach(ctx, rels), (e) => toEngineError(e, Stage.resolve, rels)).pipe(
        Effect.flatMap((each) =>
          Result.isFailure(each)
            ? Effect.fail(each.failure)
            : Effect.succeed(
              new Map(each.success.map(([rel, r]) => [rel, Result.map(r, (t) => inspectionOf(root, t))] as const))
            )
        )
      )

    const storeFailure = (what: string) => (e: StoreError) => fromStoreError(e, Stage.persist, [], what)
    // Before any repair or write: the database must be the history this workspace remembers.
    const history = yield* bindHistory({ store, stateDir, root, environmentId, resetHistory: config.resetHistory === true })
    yield* Effect.addFinalizer(() => Effect.sync(() => history.flush()))
    const remembered = <E, R>(effect: Effect.Effect<PatchHistoryRecord, E, R>) =>
      Effect.tap(effect, (record) => Effect.sync(() => history.remember(record.commitOrdinal)))

    // The fiber's listener hears a lock wait of the startup repair too (it runs before any request).
    const repair = Effect.flatMap(Effect.service(CurrentListener), (onProgress) =>
      deps.lock.with(
        deps.lockTimeoutMs,
        [],
        repairIntents({ store, ctx, environmentId, newFileMode: deps.newFileMode }),
        onProgress
      )).pipe(
      // Completed and uncertain outcomes wrote records: the workspace has seen them too.
      Effect.tap((report) =>
        report.outcomes.some((o) => o.action === "completed" || o.action === "uncertain")
          ? store.identity(environmentId).pipe(
            Effect.mapError(storeFailure("Reading the history's last ordinal failed")),
            Effect.map((identity) => history.remember(identity.lastOrdinal))
          )
          : Effect.void
      )
    )
    const startupRepair: RepairReport = config.repairOnStart !== false ? yield* repair : { outcomes: [] }

    const uncertain = store.uncertainRecords(environmentId).pipe(
      Effect.mapError(storeFailure("Reading the uncertain outcomes failed")),
      Effect.map((all) => all.map(uncertainOutcomeOf))
    )
    const acknowledge = (id: string) =>
      Effect.gen(function*() {
        const matches = (yield* uncertain).filter((u) => u.recordId === id || u.transactionId === id)
        const found = matches.find((u) => u.acknowledgedAt === undefined) ?? matches[0]
        if (found === undefined) {
          return yield* new EngineError({
            code: "request_invalid",
            stage: Stage.normalize,
            paths: [],
            message: `No commit_state_uncertain outcome has the record or transaction id '${id}'; 'forkjoin repair' lists them.`
          })
        }
        if (found.acknowledgedAt !== undefined) return found
        const now = yield* Clock.currentTimeMillis
        const acked = yield* store.acknowledge(environmentId, found.recordId, now, "acknowledged").pipe(
          Effect.mapError(storeFailure("Recording the acknowledgement failed"))
        )
        return uncertainOutcomeOf(acked)
      })

    return Engine.of({
      root,
      environmentId,
      applyPatch: (request) => remembered(applyPatch(deps, request).pipe(Effect.provideService(Fault.Faults, faults))),
      applyPlan: (request) => remembered(applyPlan(deps, request).pipe(Effect.provideService(Fault.Faults, faults))),
      locked: (effect) =>
        Effect.flatMap(Effect.service(CurrentListener), (onProgress) =>
          deps.lock.with(deps.lockTimeoutMs, [], effect, onProgress)),
      repair,
      startupRepair,
      historyReset: history.reset,
      historyResets: store.historyResets(environmentId).pipe(Effect.mapError(storeFailure("Reading the history resets failed"))),
      uncertainOutcomes: Effect.map(uncertain, (all) => all.filter((u) => u.acknowledgedAt === undefined)),
      acknowledge,
      read,
      inspect,
      events
    })
  })
