/**
 * Sessions under Effect (SPEC §5): a session is an Effect program bound to a thread, a
 * workspace view, a driver and a mode. It asks the `Driver` for one action at a time, decodes
 * it (untrusted), runs it and records `{ action, observation }`. A refused action never ends
 * the session; only a clean `finish`, the driver stopping, the step limit, the timeout
 * (`Clock`, so `TestClock` drives it in tests) or interruption do.
 *
 * - `direct`: writes go through the engine, one transaction per `apply_patch`; a model-managed
 *   batch stages its patches in memory and commits them as ONE engine transaction.
 * - `changeset_export`: the `Overlay` stages every write; a clean `finish` exports the
 *   changeset; batch control is refused (`changeset_batch_control_rejected`).
 * - `analysis_only`: every mutation is refused (`analysis_only`).
 *
 * Error, timeout and interruption exits export nothing: the view is released (overlay
 * discarded, open batch dropped) by the session's scope. Owns the action loop and the
 * mapping of outcomes to observations; does not own staging (`Overlay`), the engine, or
 * artifacts on disk (`Artifacts`).
 *
 * @since 0.1.0
 */
import { Engine, Grants } from "@forkjoin/engine/Engine"
import { decodeUtf8 } from "@forkjoin/patch"
import { Changeset, type ChangesetEncoded, type TaskId, type ThreadId, TurnId } from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import * as Duration from "effect/Duration"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { decodeAction, encodeAction, type Observation, ok, type ParsedAction, refused, reservedActions } from "./Action.ts"
import type { BlobStore } from "./BlobStore.ts"
import { Driver, type Step } from "./Driver.ts"
import * as DirectView from "./internal/directView.ts"
import * as Overlay from "./Overlay.ts"
import * as WriteScope from "./WriteScope.ts"

/** The turn recorded with direct-mode transactions when the caller names none. */
const sessionTurn = TurnId.make("session")

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * The three session modes of SPEC §5.
 *
 * @category models
 * @since 0.1.0
 */
export type Mode = "direct" | "changeset_export" | "analysis_only"

interface CommonOptions {
  readonly threadId: ThreadId
  /** Turn id recorded with direct-mode transactions (default `"session"`). */
  readonly turnId?: TurnId
  /** Wall-clock budget measured with `Clock`; on expiry the session ends `timed_out`, exporting nothing. */
  readonly timeoutMs?: number
  /** Most actions a driver may issue (default 1000), so a looping driver cannot run forever. */
  readonly maxSteps?: number
}

/**
 * How a session is set up; `changeset_export` needs the child's task id and write scope.
 *
 * @category models
 * @since 0.1.0
 */
export type SessionOptions =
  | CommonOptions & { readonly mode: "direct" }
  | CommonOptions & { readonly mode: "analysis_only" }
  | CommonOptions & {
    readonly mode: "changeset_export"
    readonly taskId: TaskId
    readonly writeScope: WriteScope.WriteScope
    readonly maxFileBytes?: number
  }

/**
 * How a session ended: a clean `finish`; the driver stopped without one; the step limit; the
 * timeout; or a failure (e.g. the changeset's blobs could not be stored). Only `finished`
 * exports.
 *
 * @category models
 * @since 0.1.0
 */
export type SessionStatus = "finished" | "driver_stopped" | "step_limit" | "timed_out" | "failed"

/**
 * A session's outcome: its status, every step, the exported changeset (changeset sessions
 * that finished cleanly) and the transactions a direct session committed.
 *
 * @category models
 * @since 0.1.0
 */
export interface SessionResult {
  readonly threadId: ThreadId
  readonly mode: Mode
  readonly status: SessionStatus
  readonly steps: ReadonlyArray<Step>
  readonly changeset?: Changeset
  readonly transactions: ReadonlyArray<string>
  readonly error?: { readonly code: string; readonly message: string }
}

const DEFAULT_MAX_STEPS = 1000

const BATCH_ACTIONS = new Set(["begin_batch", "commit_batch", "abort_batch"])

// -------------------------------------------------------------------------------------
// observations
// -------------------------------------------------------------------------------------

/** Refusals the views fail with, as observations (codes stay the engine's and the overlay's). */
const refusalOf = (e: EngineError | WriteScope.WriteScopeViolation | Overlay.OverlayClosed): Observation => {
  if (e instanceof EngineError) return refused(e.code, e.message, { paths: e.paths })
  if (e._tag === "WriteScopeViolation") {
    return refused(e.code, e.message, { violatingPaths: e.violatingPaths, writeScope: e.writeScope })
  }
  return refused(e.code, e.message, null)
}

const contentData = (p: string, bytes: Uint8Array) => {
  const text = decodeUtf8(bytes)
  return text === undefined
    ? { path: p, bytes: bytes.length, base64: Buffer.from(bytes).toString("base64") }
    : { path: p, bytes: bytes.length, text }
}

const planData = (plan: { readonly summary: ReadonlyArray<{ readonly status: string; readonly path: string }> }) =>
  plan.summary.map((s) => `${s.status} ${s.path}`)

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

interface View {
  readonly step: (action: ParsedAction) => Effect.Effect<{ readonly observation: Observation; readonly finished: boolean }, SessionFailure, BlobStore>
  readonly changeset: () => Changeset | undefined
  readonly transactions: ReadonlyArray<string>
  readonly release: Effect.Effect<void>
}

/** A failure that ends the session (not a refusal): nothing is exported. */
class SessionFailure extends Schema.TaggedError<SessionFailure>()("SessionFailure", {
  code: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

const directView = (engine: Engine["Service"], options: SessionOptions): View => {
  let batch: DirectView.Batch | undefined
  const transactions: Array<string> = []
  const context = { threadId: options.threadId, turnId: options.turnId ?? sessionTurn, grant: Grants.writeCreateDirs }
  const done = (observation: Observation) => ({ observation, finished: false })
  const step = (action: ParsedAction) =>
    Effect.gen(function*() {
      switch (action.name) {
        case "read_file": {
          const r = yield* DirectView.readFile(engine, batch, action.args.path)
          return done(ok(`Read '${r.path}' (${r.bytes.length} bytes).`, contentData(r.path, r.bytes)))
        }
        case "list_dir": {
          const r = yield* DirectView.listDir(engine, batch, action.args.path)
          return done(ok(`Listed '${r.path}' (${r.entries.length} entries).`, r))
        }
        case "apply_patch": {
          if (batch !== undefined) {
            const plan = yield* DirectView.stagePatch(engine, batch, action.args.patch)
            return done(ok(`Staged in the open batch (patch ${batch.patches}); commit_batch applies the batch as one transaction.`, { staged: planData(plan) }))
          }
          const record = yield* engine.applyPatch({ ...context, patch: action.args.patch })
          transactions.push(record.transactionId)
          return done(ok(`Applied as transaction ${record.transactionId}.`, { transactionId: record.transactionId, changes: record.changes.map((c) => `${c.kind} ${c.path}`) }))
        }
        case "begin_batch": {
          if (batch !== undefined) return done(refused("batch_already_open", "A batch is already open; commit_batch or abort_batch it first."))
          batch = DirectView.emptyBatch()
          return done(ok("Batch opened: apply_patch now stages; commit_batch applies every staged patch as one transaction."))
        }
        case "abort_batch": {
          if (batch === undefined) return done(refused("no_open_batch", "There is no open batch to abort."))
          const dropped = batch.patches
          batch = undefined
          return done(ok(`Batch aborted: ${dropped} staged patch(es) dropped; nothing was written.`, { dropped }))
        }
        case "commit_batch": {
          if (batch === undefined) return done(refused("no_open_batch", "There is no open batch to commit; begin_batch first."))
          const plan = DirectView.netPlan(batch)
          const patches = batch.patches
          // The batch closes whatever the outcome: a refused commit wrote nothing, and a model
          // retrying must re-plan against the live files.
          batch = undefined
          if (plan.files.length === 0) return done(ok(`Batch committed: its ${patches} patch(es) change nothing, so no transaction was recorded.`, { patches }))
          const record = yield* engine.applyPlan({ ...context, plan })
          transactions.push(record.transactionId)
          return done(ok(`Batch of ${patches} patch(es) committed as transaction ${record.transactionId}.`, { transactionId: record.transactionId, patches, changes: planData(plan) }))
        }
        case "finish": {
          if (batch !== undefined) return done(refused("open_batch", "finish was refused: a batch is open; commit_batch or abort_batch it first."))
          return { observation: ok("Session finished.", { transactions: [...transactions] }), finished: true }
        }
        default:
          return done(notAvailable(action.name))
      }
    }).pipe(Effect.catch((e) => Effect.succeed(done(refusalOf(e)))))
  return {
    step,
    changeset: () => undefined,
    transactions,
    release: Effect.sync(() => {
      batch = undefined
    })
  }
}

const overlayView = (overlay: Overlay.Overlay, options: SessionOptions): View => {
  let changeset: Changeset | undefined
  const done = (observation: Observation) => ({ observation, finished: false })
  const step = (action: ParsedAction) =>
    Effect.gen(function*() {
      if (options.mode === "analysis_only" && (action.name === "apply_patch" || BATCH_ACTIONS.has(action.name))) {
        return done(refused("analysis_only", `${action.name} was refused: this is an analysis_only session; it may read and list but never change files.`))
      }
      switch (action.name) {
        case "read_file": {
          const bytes = yield* overlay.readFile(action.args.path)
          return done(ok(`Read '${action.args.path}' (${bytes.length} bytes).`, contentData(action.args.path, bytes)))
        }
        case "list_dir": {
          const entries = yield* overlay.listDir(action.args.path)
          return done(ok(`Listed '${action.args.path}' (${entries.length} entries).`, { path: action.args.path, entries }))
        }
        case "apply_patch": {
          const r = yield* overlay.applyPatch(action.args.patch)
          return done(ok(`Staged ${r.changes.length} change(s) in this child's workspace view; the shared workspace is untouched.`, r))
        }
        case "begin_batch":
        case "commit_batch":
        case "abort_batch":
          return done(refused(
            "changeset_batch_control_rejected",
            `${action.name} was refused: a changeset child's edits are already one unit (its changeset); keep patching and finish when done.`
          ))
        case "finish": {
          if (options.mode !== "changeset_export") return { observation: ok("Session finished."), finished: true }
          const exported = yield* overlay.export({ childId: options.taskId, taskId: options.taskId, threadId: options.threadId }).pipe(
            Effect.catchTag("BlobStoreError", (e) => Effect.fail(new SessionFailure({ code: "export_failed", message: e.message, cause: e })))
          )
          changeset = exported
          return {
            observation: ok(`Session finished; changeset exported with ${exported.entries.length} entr${exported.entries.length === 1 ? "y" : "ies"}.`, {
              entries: exported.entries.map((e) => ({ path: e.path, kind: e.kind, exportable: e.exportable })),
              exportable: exported.exportable
            }),
            finished: true
          }
        }
        default:
          return done(notAvailable(action.name))
      }
    }).pipe(Effect.catchTags({
      EngineError: (e) => Effect.succeed(done(refusalOf(e))),
      WriteScopeViolation: (e) => Effect.succeed(done(refusalOf(e))),
      OverlayClosed: (e) => Effect.succeed(done(refusalOf(e)))
    }))
  return { step, changeset: () => changeset, transactions: [], release: overlay.discard }
}

const notAvailable = (name: string): Observation => {
  const brings = (reservedActions as Record<string, string>)[name]
  return refused("not_available", `${name} is not available in this session: ${brings ?? "it is not a session action"}.`)
}

/**
 * Runs one session to its end with the `Driver` in context. Never fails: refusals become
 * observations and endings become a status; interruption discards the view and propagates.
 *
 * @category constructors
 * @since 0.1.0
 */
export const run = (options: SessionOptions): Effect.Effect<SessionResult, never, Engine | BlobStore | Driver> =>
  Effect.gen(function*() {
    const engine = yield* Engine
    return yield* options.mode === "direct"
      ? runView(Effect.succeed(directView(engine, options)), options)
      : runOn(Overlay.engineBase(engine), options)
  })

/**
 * Runs one overlay session (`changeset_export` or `analysis_only`) over `base` instead of the
 * engine's workspace: a runner's child reads the parent's baseline this way. Same endings as `run`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runOn = (
  base: Overlay.Base,
  options: Exclude<SessionOptions, { readonly mode: "direct" }>
): Effect.Effect<SessionResult, never, BlobStore | Driver> =>
  runView(
    Overlay.makeOn(base, {
      // analysis_only never reaches the overlay's mutations (refused first); the overlay only
      // gives it repeatable reads, so its scope is never consulted.
      writeScope: options.mode === "changeset_export" ? options.writeScope : WriteScope.none,
      ...(options.mode === "changeset_export" && options.maxFileBytes !== undefined ? { maxFileBytes: options.maxFileBytes } : {})
    }).pipe(Effect.map((o) => overlayView(o, options))),
    options
  )

const runView = <R>(acquire: Effect.Effect<View, never, R>, options: SessionOptions): Effect.Effect<SessionResult, never, R | BlobStore | Driver> =>
  Effect.gen(function*() {
    const driver = yield* Driver
    const steps: Array<Step> = []
    const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS

    const started = yield* Clock.currentTimeMillis
    let lastTurn = started
    const loop = (view: View) =>
      Effect.gen(function*() {
        while (steps.length < maxSteps) {
          // Steps can run synchronously back to back: check the deadline between them and yield,
          // so the timeout (and an interruption) takes effect even when no step waits.
          const now = yield* Clock.currentTimeMillis
          if (options.timeoutMs !== undefined && now - started >= options.timeoutMs) {
            return { status: "timed_out" as const }
          }
          yield* Effect.yieldNow
          // Microtask yields never let the event loop run: every 20 ms give it a turn, so
          // timers and signals (Ctrl-C) reach a session whose steps never wait.
          if (now - lastTurn >= 20) {
            lastTurn = now
            yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
          }
          const raw = yield* driver.next(steps)
          if (raw === undefined) return { status: "driver_stopped" as const }
          const decoded = decodeAction(raw)
          if (Result.isFailure(decoded)) {
            steps.push({ action: raw, observation: refused(decoded.failure.code, decoded.failure.message, { path: decoded.failure.path }) })
            continue
          }
          const r = yield* view.step(decoded.success)
          steps.push({ action: encodeAction(decoded.success), observation: r.observation })
          if (r.finished) return { status: "finished" as const }
        }
        return { status: "step_limit" as const }
      })

    const timed = (view: View) =>
      options.timeoutMs === undefined
        ? loop(view)
        : loop(view).pipe(
          Effect.timeoutOption(Duration.millis(options.timeoutMs)),
          Effect.map(Option.getOrElse(() => ({ status: "timed_out" as const })))
        )

    const outcome = yield* Effect.acquireUseRelease(
      acquire,
      (view) =>
        timed(view).pipe(
          Effect.map((r): Omit<SessionResult, "threadId" | "mode" | "steps"> => {
            const changeset = r.status === "finished" ? view.changeset() : undefined
            return { status: r.status, transactions: [...view.transactions], ...(changeset === undefined ? {} : { changeset }) }
          }),
          Effect.catchTag("SessionFailure", (e) =>
            Effect.succeed({ status: "failed" as const, transactions: [...view.transactions], error: { code: e.code, message: e.message } }))
        ),
      // Exported overlays ignore the discard; every other ending drops what was staged.
      (view) => view.release
    )
    return { threadId: options.threadId, mode: options.mode, steps: [...steps], ...outcome }
  })

/**
 * The JSON form of a session's changeset (for traces and `--json` output).
 *
 * @category constructors
 * @since 0.1.0
 */
export const encodeChangeset = (changeset: Changeset): ChangesetEncoded => Schema.encodeSync(Changeset)(changeset)
