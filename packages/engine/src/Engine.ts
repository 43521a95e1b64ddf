/**
 * The native patch engine (SPEC §3): the one code path that writes to a workspace. Patches,
 * changeset merges, rollbacks and conflict resolutions all become a plan and go through the
 * same ten stages — normalize, parse, resolve, authorize, plan, lock, stage, commit, persist,
 * publish — so every write is atomic, path-safe, journaled and recorded exactly once.
 * It owns the workspace writes and the journal protocol; record storage is `HistoryStore`.
 *
 * @since 0.1.0
 */
import { type FileState, parsePatch, patchTargets, type Plan, planPatch, type Profile } from "@forkjoin/patch"
import { describeText } from "@forkjoin/patch/TextInfo"
import { HistoryStore, type StoreError } from "@forkjoin/history/HistoryStore"
import type {
  Authority,
  EnvironmentId,
  FileChange,
  InvocationId,
  JournalIntent,
  PatchHistoryRecord,
  Provenance,
  RecordDraft,
  RecordId,
  RecordLinks,
  Sha256Hash,
  Snapshot,
  ThreadId,
  TransactionId,
  TurnId
} from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import { isUtf8 } from "node:buffer"
import { createHash, randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { commitStaged, type Staged, stageSteps, stepsOf } from "./internal/commit.ts"
import * as Fault from "./internal/fault.ts"
import { withPathLocks, WorkspaceLock } from "./internal/lock.ts"
import { type RepairReport, repairIntents } from "./internal/repair.ts"
import { DEFAULT_DENIED_GLOBS } from "./Policy.ts"
import { compileGlob, type ResolveContext, type ResolvedTarget, resolveTargets } from "./internal/resolve.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * What a turn may do to files (SPEC §3 stage 4). Read-only is `write: false`.
 *
 * @category models
 * @since 0.1.0
 */
export interface Grant {
  readonly write: boolean
  readonly createDirs: boolean
  readonly overwrite: boolean
}

/**
 * Common grants: read-only, write, write + create-dirs (the CLI default), and everything.
 *
 * @category constructors
 * @since 0.1.0
 */
export const Grants = {
  readOnly: { write: false, createDirs: false, overwrite: false },
  write: { write: true, createDirs: false, overwrite: false },
  writeCreateDirs: { write: true, createDirs: true, overwrite: false },
  full: { write: true, createDirs: true, overwrite: true }
} as const satisfies Record<string, Grant>

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
  /** Relative globs a request may never touch. Default `.git/**`, `.forkjoin/**`. */
  readonly deniedGlobs?: ReadonlyArray<string>
  /** Fold letter case for path identity; default: probed on the workspace filesystem. */
  readonly caseInsensitive?: boolean
  readonly lockTimeoutMs?: number
  readonly limits?: Partial<Limits>
  readonly budgets?: Budgets
  /** Run startup repair when the engine is built (default true). */
  readonly repairOnStart?: boolean
}

/**
 * The execution a request belongs to, its permissions and its optional guards.
 *
 * @category models
 * @since 0.1.0
 */
export interface RequestContext {
  readonly threadId: string
  readonly turnId: string
  readonly invocationId?: string
  /** Default `patch:<uuid>`. */
  readonly transactionId?: string
  /** Default write + create-dirs, no overwrite. */
  readonly grant?: Grant
  /** Version guards: the request fails unless each path currently hashes to the value (`sha256:<hex>`, or `null` for absent). */
  readonly expect?: Readonly<Record<string, string | null>>
  readonly authority?: Authority
  readonly provenance?: Provenance
  readonly links?: RecordLinks
  /** Per-request limit overrides. */
  readonly limits?: Partial<Limits>
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
export interface PlanRequest extends RequestContext {
  readonly plan: Plan
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

const DEFAULT_LIMITS: Limits = { maxPatchBytes: 64 * 1024 * 1024, maxFiles: 10_000, maxFileBytes: 256 * 1024 * 1024 }

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
  readonly applyPlan: (request: PlanRequest) => Effect.Effect<PatchHistoryRecord, EngineError>
  /** Startup repair (SPEC §4.5) of intents left open by crashed processes. */
  readonly repair: Effect.Effect<RepairReport, EngineError>
  /** Reads the live state of workspace-relative paths (resolution rules apply). */
  readonly read: (paths: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, FileState>, EngineError>
  /** Applied-record events. */
  readonly events: PubSub.PubSub<HistoryEvent>
}>()("forkjoin/engine/Engine") {
  /** The engine over a `HistoryStore`; runs startup repair unless disabled. */
  static readonly layer = (config: EngineConfig): Layer.Layer<Engine, EngineError, HistoryStore> =>
    Layer.effect(Engine, make(config))
}

// -------------------------------------------------------------------------------------
// helpers
// -------------------------------------------------------------------------------------

/** `sha256:<hex>` of bytes. */
export const sha256 = (bytes: Uint8Array): Sha256Hash =>
  `sha256:${createHash("sha256").update(bytes).digest("hex")}` as Sha256Hash

/** The stable environment id of a workspace real path. */
export const environmentIdOf = (realRoot: string): EnvironmentId =>
  `env-${createHash("sha256").update(realRoot).digest("hex").slice(0, 20)}` as EnvironmentId

const errnoOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "code" in error ? String(error.code) : String(error)

const storeFailure = (stage: 7 | 9, paths: ReadonlyArray<string>, e: StoreError, what: string) =>
  new EngineError({ code: "commit_failed", stage, paths, message: `${what}: ${e.message}` })

const snapshotOf = (bytes: Uint8Array, mode: number, hash: Sha256Hash): Snapshot => {
  const info = describeText(bytes, isUtf8)
  return {
    hash,
    bytes: bytes.length,
    encoding: info.encoding,
    lineEnding: info.lineEnding,
    finalNewline: info.finalNewline,
    mode
  }
}

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && Buffer.compare(a, b) === 0

/**
 * One probe file tells two facts about the workspace filesystem: whether it folds letter case,
 * and the mode a new file gets under this process's umask.
 */
const probeFilesystem = (dir: string): { readonly caseInsensitive: boolean; readonly newFileMode: number } => {
  const probe = path.join(dir, `.fj-probe-${randomUUID()}`)
  try {
    fs.writeFileSync(probe, "", { mode: 0o666 })
    return {
      caseInsensitive: fs.existsSync(path.join(dir, path.basename(probe).toUpperCase())),
      newFileMode: fs.statSync(probe).mode & 0o7777
    }
  } catch {
    return { caseInsensitive: false, newFileMode: 0o644 }
  } finally {
    fs.rmSync(probe, { force: true })
  }
}

// -------------------------------------------------------------------------------------
// the engine
// -------------------------------------------------------------------------------------

const make = (config: EngineConfig) =>
  Effect.gen(function*() {
    const store = yield* HistoryStore
    const root = yield* Effect.try({
      try: () => fs.realpathSync(config.root),
      catch: (e) =>
        new EngineError({
          code: "path_invalid",
          stage: 3,
          paths: [],
          message: `Workspace '${config.root}' cannot be opened (${errnoOf(e)}); pass an existing directory.`
        })
    })
    const stateDir = path.join(root, ".forkjoin")
    fs.mkdirSync(stateDir, { recursive: true })
    const probed = probeFilesystem(stateDir)
    const caseInsensitive = config.caseInsensitive ?? probed.caseInsensitive
    const ctx: ResolveContext = {
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
    }
    const newFileMode = probed.newFileMode
    const environmentId = environmentIdOf(root)
    const lock = new WorkspaceLock(path.join(stateDir, "lock.db"))
    yield* Effect.addFinalizer(() => Effect.sync(() => lock.close()))
    const events = yield* PubSub.unbounded<HistoryEvent>()
    const lockTimeoutMs = config.lockTimeoutMs ?? 10_000

    const resolve = (rels: ReadonlyArray<string>) =>
      Effect.try({ try: () => resolveTargets(ctx, rels), catch: (e) => toEngineError(e, 3, rels) })

    const run = (
      request: RequestContext,
      compile: (files: ReadonlyMap<string, FileState>, targets: ReadonlyMap<string, ResolvedTarget>) => Plan,
      rels: ReadonlyArray<string>,
      isPatch: boolean
    ) =>
      Effect.gen(function*() {
        const limits = { ...DEFAULT_LIMITS, ...config.limits, ...request.limits }
        const grant = request.grant ?? Grants.writeCreateDirs
        // Stage 1: limits on the shape of the request.
        if (rels.length > limits.maxFiles) {
          return yield* new EngineError({
            code: "input_too_large",
            stage: 1,
            paths: [],
            message: `The request touches ${rels.length} files; the limit is ${limits.maxFiles}. Split it into smaller requests.`
          })
        }
        // Stage 2 (guards): well-formed version guards.
        const guards = Object.entries(request.expect ?? {})
        for (const [p, h] of guards) {
          if (h !== null && !/^sha256:[0-9a-f]{64}$/.test(h)) {
            return yield* new EngineError({
              code: "version_guard_failed",
              stage: 2,
              paths: [p],
              message: `Version guard for '${p}' is not 'sha256:<64 hex>' or null; send the hash forkjoin reported for the file.`
            })
          }
        }
        Fault.afterStage(2)
        // Stage 3: resolve every target (and every guarded path).
        const guardPaths = guards.map(([p]) => p).filter((p) => !rels.includes(p))
        const resolved = yield* resolve([...rels, ...guardPaths])
        const targets = new Map(resolved.map((t) => [t.path, t]))
        const files = new Map(resolved.map((t) => [t.path, t.state]))
        for (const [p, h] of guards) {
          const s = files.get(p)
          const live = s?._tag === "File" ? sha256(s.bytes) : null
          if (live !== h) {
            return yield* new EngineError({
              code: "version_guard_failed",
              stage: 2,
              paths: [p],
              message: `'${p}' is ${live === null ? "absent" : `at ${live}`}, not at the expected ${
                h ?? "absent"
              }; re-read the file and rebuild the patch.`
            })
          }
        }
        Fault.afterStage(3)
        // Stage 4: authorize.
        if (!grant.write) {
          return yield* new EngineError({
            code: "permission_denied",
            stage: 4,
            paths: rels,
            message: "This turn has a read-only grant; it may read files but not change them."
          })
        }
        Fault.afterStage(4)
        // Stage 5: plan the exact virtual workspace.
        const plan = yield* Effect.try({ try: () => compile(files, targets), catch: (e) => toEngineError(e, 5, rels) })
        if (plan.files.length === 0) {
          return yield* new EngineError({
            code: "patch_syntax",
            stage: 5,
            paths: rels,
            message: "The request changes nothing (every file already has the requested content)."
          })
        }
        for (const f of plan.files) {
          if (f.after !== undefined && f.after.length > limits.maxFileBytes) {
            return yield* new EngineError({
              code: "input_too_large",
              stage: 1,
              paths: [f.path],
              message: `'${f.path}' would be ${f.after.length} bytes; the per-file limit is ${limits.maxFileBytes}.`
            })
          }
        }
        if (!isPatch) yield* authorizePlan(plan, grant)
        const steps = yield* Effect.try({ try: () => stepsOf(plan, targets), catch: (e) => toEngineError(e, 5, rels) })
        const missingDirs = missingDirectories(steps.filter((s) => s.after !== undefined).map((s) => s.absolute))
        if (missingDirs.length > 0 && !grant.createDirs) {
          return yield* new EngineError({
            code: "directory_create_denied",
            stage: 4,
            paths: missingDirs.map((d) => relOf(d)),
            message: `The request needs new directories (${
              missingDirs.map((d) => relOf(d)).join(", ")
            }) and this turn's grant does not allow creating directories.`
          })
        }
        yield* checkBudgets(request, plan)
        Fault.afterStage(5)

        // Stages 6-10 under the locks.
        const keys = steps.map((s) => (caseInsensitive ? s.absolute.toLowerCase() : s.absolute))
        return yield* withPathLocks(
          keys,
          lock.with(lockTimeoutMs, plan.files.map((f) => f.path), commitLocked(request, plan, steps, targets, missingDirs))
        )
      })

    const relOf = (abs: string) => path.relative(root, abs).split(path.sep).join("/")

    const authorizePlan = (plan: Plan, grant: Grant) =>
      Effect.gen(function*() {
        for (const f of plan.files) {
          if (!grant.overwrite && (f.kind === "replace" || f.overwritten !== undefined)) {
            return yield* new EngineError({
              code: f.kind === "move" ? "unsafe_move" : "target_exists",
              stage: 4,
              paths: [f.path],
              message: `'${f.path}' exists and this request's grant does not allow overwriting it.`
            })
          }
        }
      })

    const checkBudgets = (request: RequestContext, plan: Plan) =>
      Effect.gen(function*() {
        const b = config.budgets
        if (b === undefined) return
        const bytes = plan.files.reduce((n, f) => n + (f.after?.length ?? 0), 0)
        const filesCount = plan.files.length
        const check = (used: { bytes: number; files: number }, maxBytes: number | undefined, maxFiles: number | undefined, scope: string) =>
          (maxBytes !== undefined && used.bytes + bytes > maxBytes) || (maxFiles !== undefined && used.files + filesCount > maxFiles)
            ? Effect.fail(
              new EngineError({
                code: "budget_exceeded",
                stage: 5,
                paths: plan.files.map((f) => f.path),
                message: `This request would bring the ${scope} to ${used.bytes + bytes} bytes / ${
                  used.files + filesCount
                } files, over its budget of ${maxBytes ?? "∞"} bytes / ${maxFiles ?? "∞"} files. Write less or ask for a larger budget.`
              })
            )
            : Effect.void
        if (b.turnBytes !== undefined || b.turnFiles !== undefined) {
          const used = yield* store.usage(environmentId, request.turnId as TurnId).pipe(
            Effect.mapError((e) => storeFailure(7, [], e, "Reading the turn's usage failed"))
          )
          yield* check(used, b.turnBytes, b.turnFiles, `turn '${request.turnId}'`)
        }
        if (b.workspaceBytes !== undefined || b.workspaceFiles !== undefined) {
          const used = yield* store.usage(environmentId, undefined).pipe(
            Effect.mapError((e) => storeFailure(7, [], e, "Reading the workspace usage failed"))
          )
          yield* check(used, b.workspaceBytes, b.workspaceFiles, "workspace")
        }
      })

    const missingDirectories = (absolutes: ReadonlyArray<string>): ReadonlyArray<string> => {
      const out = new Set<string>()
      for (const abs of absolutes) {
        const chain: Array<string> = []
        let dir = path.dirname(abs)
        while (!fs.existsSync(dir) && dir !== path.dirname(dir)) {
          chain.push(dir)
          dir = path.dirname(dir)
        }
        for (const d of chain.reverse()) out.add(d)
      }
      return [...out]
    }

    const commitLocked = (
      request: RequestContext,
      plan: Plan,
      steps: ReturnType<typeof stepsOf>,
      targets: ReadonlyMap<string, ResolvedTarget>,
      missingDirs: ReadonlyArray<string>
    ) =>
      Effect.gen(function*() {
        // Stage 6: nothing may have moved since planning.
        const paths = steps.map((s) => s.path)
        const relock = yield* resolve(paths)
        for (const live of relock) {
          const planned = targets.get(live.path)!.state
          const same = planned._tag === "File"
            ? live.state._tag === "File" && sameBytes(planned.bytes, live.state.bytes)
            : live.state._tag === planned._tag
          if (!same) {
            return yield* new EngineError({
              code: "stale_file",
              stage: 6,
              paths: [live.path],
              message: `'${live.path}' changed between planning and locking; nothing was written. Re-read it and retry.`
            })
          }
        }
        Fault.afterStage(6)

        // Stage 7: journal the intent (with every pre/post blob), then stage temp files.
        const intentId = randomUUID()
        const transactionId = (request.transactionId ?? `patch:${randomUUID()}`) as TransactionId
        // Hash each content once: snapshots, the intent's pre/post and the blobs share it.
        const hashes = new Map<Uint8Array, Sha256Hash>()
        const hashOnce = (bytes: Uint8Array): Sha256Hash => {
          let h = hashes.get(bytes)
          if (h === undefined) {
            h = sha256(bytes)
            hashes.set(bytes, h)
          }
          return h
        }
        const snapshot = (bytes: Uint8Array, mode: number): Snapshot => snapshotOf(bytes, mode, hashOnce(bytes))
        const blobs: Array<Uint8Array> = []
        const modeOf = (rel: string): number | undefined => targets.get(rel)?.mode
        const changes: Array<FileChange> = plan.files.map((f) => {
          const beforeMode = modeOf(f.moveFrom ?? f.path) ?? newFileMode
          const afterMode = modeOf(f.path) ?? modeOf(f.moveFrom ?? "") ?? newFileMode
          if (f.before !== undefined) blobs.push(f.before)
          if (f.after !== undefined) blobs.push(f.after)
          if (f.overwritten !== undefined) blobs.push(f.overwritten)
          return {
            kind: f.kind,
            path: f.path as FileChange["path"],
            ...(f.moveFrom === undefined ? {} : { moveFrom: f.moveFrom as FileChange["path"] }),
            ...(f.before === undefined ? {} : { before: snapshot(f.before, beforeMode) }),
            ...(f.after === undefined ? {} : { after: snapshot(f.after, afterMode) }),
            ...(f.overwritten === undefined ? {} : { overwritten: snapshot(f.overwritten, modeOf(f.path) ?? newFileMode) })
          }
        })
        const draft: RecordDraft = {
          recordId: `rec-${randomUUID()}` as RecordId,
          threadId: request.threadId as ThreadId,
          turnId: request.turnId as TurnId,
          invocationId: (request.invocationId ?? `inv-${randomUUID()}`) as InvocationId,
          environmentId,
          transactionId,
          authority: request.authority ?? "native_patch_engine",
          provenance: request.provenance ?? "native_engine",
          exactness: "exact",
          outcome: "applied",
          changes,
          directoryEffects: missingDirs.flatMap((d) => {
            const rel = relOf(d)
            return rel.startsWith("..") ? [] : [{ kind: "created" as const, path: rel as FileChange["path"] }]
          }),
          warnings: [],
          links: request.links ?? {}
        }
        const hashOf = (s: FileState | undefined) => (s?._tag === "File" ? hashOnce(s.bytes) : null)
        const intent: JournalIntent = {
          schemaVersion: 1,
          intentId,
          environmentId,
          transactionId,
          createdAt: new Date().toISOString() as JournalIntent["createdAt"],
          draft,
          entries: steps.map((s) => {
            const pre = hashOf(s.original.state)
            const preMode = s.original.mode
            return {
              path: s.path as FileChange["path"],
              pre,
              post: s.after === undefined ? null : hashOnce(s.after),
              ...(preMode === undefined ? {} : { preMode }),
              ...(s.after === undefined ? {} : { postMode: s.mode ?? newFileMode })
            }
          }),
          createdDirectories: missingDirs.map((d) => relOf(d) as FileChange["path"]).filter((d) => !d.startsWith(".."))
        }
        yield* store.openIntent(intent, blobs, blobs.map(hashOnce)).pipe(
          Effect.mapError((e) => storeFailure(7, paths, e, "Journaling the intent failed; nothing was written"))
        )
        const staged: Staged | EngineError = (() => {
          try {
            return stageSteps(fs, steps, intentId)
          } catch (e) {
            return toEngineError(e, 7, paths)
          }
        })()
        if (staged instanceof EngineError) {
          yield* store.closeIntent(intentId, "aborted", staged.message).pipe(Effect.ignore)
          return yield* staged
        }
        Fault.afterStage(7)

        // Stage 8: rename into place; any failure restores this request's files.
        const committed = (() => {
          try {
            commitStaged(fs, staged, Fault.afterRename)
            return undefined
          } catch (e) {
            return toEngineError(e, 8, paths)
          }
        })()
        if (committed !== undefined) {
          yield* store.closeIntent(intentId, "aborted", committed.message).pipe(Effect.ignore)
          return yield* committed
        }
        Fault.afterStage(8)

        // Stage 9: the record and the intent's close in one SQLite transaction.
        const record = yield* store.commitIntent(intentId, draft, Date.now()).pipe(
          Effect.catch((e: StoreError) =>
            Effect.gen(function*() {
              // Keep "rejected means untouched": put every file back, then report.
              const undo = (() => {
                try {
                  commitStaged(fs, stageSteps(fs, undoSteps(steps), `${intentId}-undo`))
                  return undefined
                } catch (err) {
                  return err
                }
              })()
              yield* store.closeIntent(intentId, "aborted", `history write failed: ${e.message}`).pipe(Effect.ignore)
              return yield* new EngineError({
                code: "commit_failed",
                stage: 9,
                paths,
                message: undo === undefined
                  ? `Recording the change failed (${e.message}); every file was restored. Retry.`
                  : `Recording the change failed (${e.message}) and restoring failed too; run 'forkjoin repair'.`
              })
            })
          )
        )
        Fault.afterStage(9)

        // Stage 10: publish.
        yield* PubSub.publish(events, { _tag: "Applied", record } as HistoryEvent)
        Fault.afterStage(10)
        return record
      })

    const applyPatch = (request: PatchRequest): Effect.Effect<PatchHistoryRecord, EngineError> =>
      Effect.gen(function*() {
        const limits = { ...DEFAULT_LIMITS, ...config.limits, ...request.limits }
        const size = Buffer.byteLength(request.patch, "utf8")
        if (size > limits.maxPatchBytes) {
          return yield* new EngineError({
            code: "input_too_large",
            stage: 1,
            paths: [],
            message: `The patch is ${size} bytes; the limit is ${limits.maxPatchBytes}. Split it into smaller patches.`
          })
        }
        Fault.afterStage(1)
        const profile = request.profile ?? "native"
        const parsed = parsePatch(request.patch, { profile })
        if (parsed._tag === "Failure") return yield* parsed.failure
        const rels = patchTargets(parsed.success)
        if (rels._tag === "Failure") return yield* rels.failure
        const grant = request.grant ?? Grants.writeCreateDirs
        return yield* run(
          request,
          (files) => {
            const r = planPatch(parsed.success, files, {
              profile,
              allowOverwrite: grant.overwrite,
              preserveLineEndings: request.preserveLineEndings ?? false
            })
            if (r._tag === "Failure") throw r.failure
            return r.success
          },
          rels.success,
          true
        )
      })

    const applyPlan = (request: PlanRequest): Effect.Effect<PatchHistoryRecord, EngineError> =>
      Effect.gen(function*() {
        const rels = [...new Set(request.plan.files.flatMap((f) => (f.moveFrom === undefined ? [f.path] : [f.path, f.moveFrom])))]
        Fault.afterStage(1)
        return yield* run(
          request,
          (files) => {
            // Every planned `before` must be what is there now (the baseline of a merge).
            for (const f of request.plan.files) {
              const checks: Array<[string, Uint8Array | undefined]> = [[f.moveFrom ?? f.path, f.before]]
              if (f.moveFrom !== undefined) checks.push([f.path, f.overwritten])
              for (const [p, expected] of checks) {
                const s = files.get(p)
                const ok = expected === undefined
                  ? s?._tag === "Missing"
                  : s?._tag === "File" && sameBytes(s.bytes, expected)
                if (!ok) {
                  throw new EngineError({
                    code: "stale_file",
                    stage: 5,
                    paths: [p],
                    message: `'${p}' is not in the state this plan was computed against; nothing was written. Recompute the plan from the live file.`
                  })
                }
                if (s !== undefined && s._tag !== "File" && s._tag !== "Missing") {
                  throw new EngineError({
                    code: "unsupported_file_type",
                    stage: 5,
                    paths: [p],
                    message: `'${p}' is not a regular file.`
                  })
                }
              }
            }
            return request.plan
          },
          rels,
          false
        )
      })

    const read = (rels: ReadonlyArray<string>) =>
      resolve(rels).pipe(Effect.map((ts) => new Map(ts.map((t) => [t.path, t.state] as const))))

    const repair = lock.with(
      lockTimeoutMs,
      [],
      repairIntents({ store, ctx, environmentId, newFileMode })
    )

    if (config.repairOnStart !== false) yield* repair

    return Engine.of({ root, environmentId, applyPatch, applyPlan, repair, read, events })
  })

/** The steps that undo a committed plan (each path back to what was read before). */
const undoSteps = (steps: ReturnType<typeof stepsOf>): ReturnType<typeof stepsOf> =>
  steps.map((s) => ({
    ...s,
    after: s.original.state._tag === "File" ? s.original.state.bytes : undefined,
    mode: s.original.mode
  }))

/** Maps a thrown value to an `EngineError` of `stage` (engine errors pass through). */
const toEngineError = (e: unknown, stage: 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9, paths: ReadonlyArray<string>): EngineError =>
  e instanceof EngineError
    ? e
    : new EngineError({
      code: "commit_failed",
      stage,
      paths,
      message: `Unexpected failure (${errnoOf(e)}); nothing was written.`
    })
