/**
 * Engine stages 6–10, run while holding the path and workspace locks: re-read every target
 * (`stale_file` if anything moved since planning), journal the intent with its blobs, stage
 * and rename the files, commit the record with the intent's close, publish the event. Every
 * history-store failure goes through `fromStoreError`; every time comes from `Clock`. The
 * on-disk steps are `commit.ts`, the draft is `draft.ts`; locking is the caller's.
 */
import type { HistoryStore, StoreError } from "@forkjoin/history/HistoryStore"
import type { Plan } from "@forkjoin/patch"
import { sameBytes } from "@forkjoin/patch/Bytes"
import { normalizePath, relativeUnder } from "@forkjoin/patch/RelativePath"
import { type EnvironmentId, InvocationId, type JournalIntent, type PatchHistoryRecord, RecordId, type Sha256Hash, TransactionId } from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import { utcTimestampFromMillis } from "@forkjoin/schema/UtcTimestamp"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import * as Result from "effect/Result"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import type { HistoryEvent, LockedSteps, RequestContext } from "../Engine.ts"
import { fromStoreError } from "../HistoryFailure.ts"
import { commitStaged, committingStaged, type Staged, stageSteps, stagingSteps, type Step } from "./commit.ts"
import { buildDraft } from "./draft.ts"
import * as Fault from "../Fault.ts"
import { PROGRESS_EVERY, type ProgressListener } from "../Progress.ts"
import { type ResolveContext, type ResolvedTarget, resolvingTargets } from "./resolve.ts"
import { checkScope } from "./scope.ts"
import { toEngineError } from "./toEngineError.ts"
import { type Pausable, runNow, runWithTurns, turnOfTheEventLoop } from "./turns.ts"

/** What stages 6–10 need from the engine. */
export interface CommitDeps {
  readonly store: HistoryStore["Service"]
  readonly events: PubSub.PubSub<HistoryEvent>
  readonly ctx: ResolveContext
  readonly environmentId: EnvironmentId
  readonly newFileMode: number
}

/** A request planned by stages 1–5, ready to commit. */
export interface Prepared {
  readonly request: RequestContext
  readonly plan: Plan
  readonly steps: ReadonlyArray<Step>
  readonly targets: ReadonlyMap<string, ResolvedTarget>
  /** Absolute directories the commit creates, parents first. */
  readonly missingDirs: ReadonlyArray<string>
  /** Hears stages 6–9 of this request. */
  readonly onProgress?: ProgressListener | undefined
}

/**
 * Stage 6: refuses the first target that lands outside the request's write scope (when it has
 * one), that leads elsewhere than where it led when planned (a folder on its path became a
 * link, or stopped being one), or whose live state differs from what was planned against;
 * pauses after each path (`runWithTurns`).
 */
export function* checkingUnchanged(
  ctx: ResolveContext,
  paths: ReadonlyArray<string>,
  targets: ReadonlyMap<string, ResolvedTarget>,
  writeScope?: ReadonlyArray<string>
): Pausable<EngineError | undefined> {
  const lived = yield* resolvingTargets(ctx, paths)
  const outside = checkScope(ctx, writeScope, lived, Stage.lock)
  if (outside !== undefined) return outside
  const key = (p: string) => (ctx.caseInsensitive ? p.toLowerCase() : p)
  for (const live of lived) {
    const then = targets.get(live.path)
    if (then !== undefined && key(then.absolute) !== key(live.absolute)) {
      const landing = relativeUnder(ctx.root, live.absolute)
      return new EngineError({
        code: "stale_file",
        stage: Stage.lock,
        paths: landing === undefined ? [live.path] : [live.path, landing],
        message: `'${live.path}' leads elsewhere than when it was planned (now to ${landing === undefined ? "outside the workspace" : `'${landing}'`}): ` +
          "a folder on its path was replaced by a link, or a link by a folder; nothing was written. Re-read it and retry."
      })
    }
    const planned = then?.state
    const same = planned?._tag === "File"
      ? live.state._tag === "File" && sameBytes(planned.bytes, live.state.bytes)
      : live.state._tag === planned?._tag
    if (!same) {
      return new EngineError({
        code: "stale_file",
        stage: Stage.lock,
        paths: [live.path],
        message: `'${live.path}' changed between planning and locking; nothing was written. Re-read it and retry.`
      })
    }
  }
  return undefined
}

/** `checkingUnchanged` at once, without pausing. */
export const checkUnchanged = (
  ctx: ResolveContext,
  paths: ReadonlyArray<string>,
  targets: ReadonlyMap<string, ResolvedTarget>,
  writeScope?: ReadonlyArray<string>
): EngineError | undefined => runNow(checkingUnchanged(ctx, paths, targets, writeScope))

/** The steps that undo a committed plan (each path back to what was read before). */
export const undoSteps = (steps: ReadonlyArray<Step>): ReadonlyArray<Step> =>
  steps.map((s) => ({
    ...s,
    after: s.original.state._tag === "File" ? s.original.state.bytes : undefined,
    mode: s.original.mode
  }))

/** Runs `f`, turning a thrown value into the stage's `EngineError`. */
const attempt = <A>(f: () => A, stage: typeof Stage.stage | typeof Stage.commit, paths: ReadonlyArray<string>): A | EngineError => {
  try {
    return f()
  } catch (e) {
    return toEngineError(e, stage, paths)
  }
}

/** `attempt` for pausable work, letting the event loop turn at its pauses. */
const attemptWithTurns = <A>(work: () => Pausable<A>, stage: typeof Stage.stage | typeof Stage.commit, paths: ReadonlyArray<string>): Effect.Effect<A | EngineError> =>
  Effect.catch(runWithTurns(work, (e) => toEngineError(e, stage, paths)), Effect.succeed)

// A journal slice: at most this many blobs or bytes per transaction (~10 ms of work).
const JOURNAL_SLICE_BLOBS = 256
const JOURNAL_SLICE_BYTES = 4 * 1024 * 1024

/**
 * Journals the intent with its blobs. One transaction holds the event loop for all of it (about
 * 1 s for 9,000 new files, measured), and no transaction may span a turn: so a large journal
 * first stores the blobs that the intent's transaction would store whole anyway (new files'
 * contents, earlier contents; not a new content stored as an edit of its earlier one) in
 * slices, one transaction each, with turns between. The intent's transaction then checks that
 * they are stored and stores the rest. A crash between leaves stored blobs and no intent:
 * nothing to repair. Small journals keep their one transaction.
 */
const journal = (
  store: HistoryStore["Service"],
  intent: JournalIntent,
  blobs: ReadonlyArray<Uint8Array>,
  hashes: ReadonlyArray<Sha256Hash>
): Effect.Effect<void, StoreError> =>
  Effect.gen(function*() {
    if (blobs.length <= JOURNAL_SLICE_BLOBS) return yield* store.openIntent(intent, blobs, hashes)
    const edits = new Set<string>(intent.entries.flatMap((e) => (e.pre !== null && e.post !== null && e.pre !== e.post ? [e.post] : [])))
    const rest: Array<number> = []
    let slice: Array<Uint8Array> = []
    let bytes = 0
    for (let i = 0; i < blobs.length; i++) {
      const blob = blobs[i]!
      if (edits.has(hashes[i]!)) {
        rest.push(i)
        continue
      }
      slice.push(blob)
      bytes += blob.byteLength
      if (slice.length >= JOURNAL_SLICE_BLOBS || bytes >= JOURNAL_SLICE_BYTES) {
        yield* store.putBlobs(slice)
        slice = []
        bytes = 0
        yield* turnOfTheEventLoop
      }
    }
    if (slice.length > 0) yield* store.putBlobs(slice)
    yield* store.openIntent(intent, rest.map((i) => blobs[i]!), rest.map((i) => hashes[i]!))
  })

/**
 * Stages 6–10 of one prepared request; the caller holds the locks. The long per-file loops
 * (re-reading, staging, the directory fsyncs) let the event loop turn; no SQLite transaction
 * is open meanwhile, and the renames run without a pause. Uninterruptible: a pause never ends
 * it half-staged (the locks' waits before it stay interruptible).
 */
export const commitLocked = <E = never, R = never>(
  deps: CommitDeps,
  prepared: Prepared,
  locked?: LockedSteps<E, R>
): Effect.Effect<PatchHistoryRecord, EngineError | E, R> =>
  Effect.gen(function*() {
    const { ctx, environmentId, events, newFileMode, store } = deps
    const { missingDirs, onProgress, plan, request, steps, targets } = prepared
    // Stage 6: the caller's own decision first (it may make the re-checks moot), then nothing
    // may have moved since planning, and every path still lands inside the write scope.
    if (locked?.before !== undefined) yield* locked.before
    const paths = steps.map((s) => s.path)
    onProgress?.({ _tag: "Checking", files: paths.length })
    const stale = yield* runWithTurns(() => checkingUnchanged(ctx, paths, targets, request.writeScope), (e) => toEngineError(e, Stage.resolve, paths))
    if (stale !== undefined) return yield* stale
    yield* Fault.afterStage(Stage.lock)

    // Stage 7: journal the intent (with every pre/post blob), then stage temp files.
    onProgress?.({ _tag: "Journaling", files: paths.length })
    const intentId = randomUUID()
    const createdAt = utcTimestampFromMillis(yield* Clock.currentTimeMillis)
    const { blobHashes, blobs, draft, intent } = buildDraft({
      plan,
      steps,
      targets,
      request,
      ids: {
        intentId,
        recordId: RecordId.make(`rec-${randomUUID()}`),
        transactionId: request.transactionId ?? TransactionId.make(`patch:${randomUUID()}`),
        invocationId: request.invocationId ?? InvocationId.make(`inv-${randomUUID()}`),
        environmentId
      },
      createdAt,
      newFileMode,
      // Directories created in an allowed root outside the workspace have no workspace path.
      createdDirectories: missingDirs.flatMap((d) => {
        const rel = relativeUnder(ctx.root, d)
        const normal = rel === undefined ? undefined : normalizePath(rel)
        return normal !== undefined && Result.isSuccess(normal) ? [normal.success] : []
      })
    })
    yield* journal(store, intent, blobs, blobHashes).pipe(
      Effect.mapError((e) => fromStoreError(e, Stage.stage, paths, "Journaling the intent failed; nothing was written"))
    )
    const staging = onProgress === undefined
      ? undefined
      : (done: number, total: number) => onProgress({ _tag: "Staging", done, total })
    const staged: Staged | EngineError = yield* attemptWithTurns(() => stagingSteps(fs, steps, intentId, staging), Stage.stage, paths)
    if (staged instanceof EngineError) {
      yield* store.closeIntent(intentId, "aborted", staged.message).pipe(Effect.ignore)
      return yield* staged
    }
    yield* Fault.afterStage(Stage.stage)

    // Stage 8: rename into place; any failure restores this request's files.
    const total = steps.length
    const renamed = yield* Fault.afterRename
    const afterRename = onProgress === undefined ? renamed : (k: number) => {
      renamed(k)
      if (k % PROGRESS_EVERY === 0 || k === total) onProgress({ _tag: "Committing", done: k, total })
    }
    onProgress?.({ _tag: "Committing", done: 0, total })
    const writer = yield* Fault.writerFor(fs, draft.transactionId)
    const committed = yield* attemptWithTurns(() => committingStaged(writer, staged, afterRename), Stage.commit, paths)
    if (committed instanceof EngineError) {
      yield* store.closeIntent(intentId, "aborted", committed.message).pipe(Effect.ignore)
      return yield* committed
    }
    yield* Fault.afterStage(Stage.commit)

    // Stage 9: the record and the intent's close in one SQLite transaction.
    onProgress?.({ _tag: "Recording", files: total })
    const committedAt = yield* Clock.currentTimeMillis
    // An edit made outside forkjoin since history last saw a path becomes a gap record first.
    const record = yield* store.commitIntent(intentId, draft, committedAt, undefined, { recordGaps: true }).pipe(
      Effect.catch((e: StoreError) =>
        Effect.gen(function*() {
          // Keep "rejected means untouched": put every file back, then report.
          const undo = attempt(() => commitStaged(fs, stageSteps(fs, undoSteps(steps), `${intentId}-undo`)), Stage.commit, paths)
          yield* store.closeIntent(intentId, "aborted", `history write failed: ${e.message}`).pipe(Effect.ignore)
          return yield* recordFailure(e, paths, undo === undefined)
        })
      )
    )
    yield* Fault.afterStage(Stage.persist)

    // Stage 10: publish.
    const event: HistoryEvent = { _tag: "Applied", record }
    yield* PubSub.publish(events, event)
    yield* Fault.afterStage(Stage.publish)
    if (locked?.after !== undefined) yield* locked.after(record)
    return record
  }).pipe(Effect.uninterruptible)

/**
 * Stage 9's failure after the files were put back (or not): `commit_failed` keeps its
 * message; a busy or corrupt database is `history_unavailable` with the store's advice.
 */
const recordFailure = (e: StoreError, paths: ReadonlyArray<string>, restored: boolean): EngineError => {
  const mapped = fromStoreError(e, Stage.persist, paths, "Recording the change failed")
  const message = mapped.code === "commit_failed"
    ? restored
      ? `Recording the change failed (${e.message}); every file was restored. Retry.`
      : `Recording the change failed (${e.message}) and restoring failed too; run 'forkjoin repair'.`
    : `${mapped.message} ${restored ? "Every file was restored." : "Restoring the files failed too; run 'forkjoin repair'."}`
  return new EngineError({ code: mapped.code, stage: Stage.persist, paths, message, cause: e })
}
