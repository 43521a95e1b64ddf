/**
 * `rollback_transaction` (SPEC §6.8): undoes exactly one transaction (a child's merge, a
 * patch, a conflict resolution) as a new transaction `rollback:<id>` linked by
 * `links.rollbackOf`. A path that changed since is merged three-way (the join's merge, with
 * the transaction's postimage as base, the live file as ours and its preimage as theirs), so
 * later work elsewhere in the file stays. Where that merge is not clean nothing is written:
 * each such path is held as a conflict `rollback:<transaction-id>:<path>`, resolved like a
 * join's, and the whole rollback is applied as one transaction when the last one closes.
 * `strict` refuses any drift (`rollback_drift`) instead, naming the paths and, where history
 * knows it, the later transaction that changed them. History is append-only.
 *
 * Owns reading the transaction and its blobs, asking the pure planner, holding the conflicts
 * and resolving them. Does not own the restore plan (`@forkjoin/merge/RollbackPlan`) nor
 * writing (the engine).
 *
 * @since 0.1.0
 */
import { Engine, Grants } from "@forkjoin/engine/Engine"
import * as Fault from "@forkjoin/engine/Fault"
import { HistoryContent, HistoryRecords } from "@forkjoin/history/HistoryStore"
import { MergeStore } from "@forkjoin/history/MergeStore"
import { planRollback, rollbackMarkerLabels, type RollbackPlanOutcome, type RollbackResolution } from "@forkjoin/merge/RollbackPlan"
import { type Language, languageOfPath } from "@forkjoin/merge/Syntax"
import type { FileState } from "@forkjoin/patch"
import { sha256 } from "@forkjoin/patch/Bytes"
import { snapshotOf } from "@forkjoin/patch/Snapshot"
import {
  ConflictId,
  type ConflictRecord,
  ownerOf,
  type PatchHistoryRecord,
  type RelativePath,
  rollbackConflictIdOf,
  type Sha256Hash,
  type ThreadId,
  TransactionId,
  TurnId
} from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { now } from "./internal/model.ts"
import { heldConflictRecords } from "./internal/settle.ts"
import { loadParsers, syntaxOf } from "./internal/syntax.ts"
import { OrchestratorError, storeFailure } from "./OrchestratorError.ts"

const ROLLBACK_TURN = TurnId.make("rollback")
const PAGE = 500

/**
 * A rollback that was applied: its record, and the paths merged with later work there.
 *
 * @category models
 * @since 0.1.0
 */
export interface RolledBack {
  readonly record: PatchHistoryRecord
  readonly merged: ReadonlyArray<RelativePath>
  /** Grammars that could not be loaded: their files were merged by lines only. */
  readonly warnings: ReadonlyArray<string>
}

/**
 * A resolution of a held rollback's conflict, as `Conflicts.resolve` takes it.
 *
 * @category models
 * @since 0.1.0
 */
export type HeldResolution =
  | { readonly kind: "apply" }
  | { readonly kind: "discard" }
  | { readonly kind: "content"; readonly bytes: Uint8Array }

/** The transaction's applied records, changes, the live state of its paths and the blobs it names. */
const loadTransaction = (transactionId: TransactionId) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryRecords
    const records = yield* history.recordsByTransaction(engine.environmentId, transactionId).pipe(Effect.mapError(storeFailure("Reading the transaction")))
    const applied = records.filter((r) => r.outcome === "applied")
    if (applied.length === 0) {
      return yield* new OrchestratorError({
        code: "unknown_transaction",
        paths: [],
        message: `No applied transaction '${transactionId}' is recorded in this workspace; 'forkjoin history timeline' lists transactions.`
      })
    }
    const changes = applied.flatMap((r) => r.changes)
    const paths = [...new Set(changes.flatMap((c) => (c.moveFrom === undefined ? [c.path] : [c.path, c.moveFrom])))]
    const live = yield* engine.read(paths)
    // The postimages too: a drifted path is merged with what the transaction left as its base.
    const hashes = [...new Set(changes.flatMap((c) => [c.before?.hash, c.after?.hash, c.overwritten?.hash].filter((h): h is Sha256Hash => h !== undefined)))]
    const blobs = yield* blobsByHash(hashes)
    // Grammars only for the languages of files changed since on both sides, as the join loads them.
    const wanted = new Set<Language>()
    for (const c of changes) {
      const state = live.get(c.path)
      const language = languageOfPath(c.path)
      if (language === undefined || state?._tag !== "File" || c.after === undefined || c.before === undefined) continue
      const hash = sha256(state.bytes)
      if (hash !== c.after.hash && hash !== c.before.hash) wanted.add(language)
    }
    const { loaded, failed } = yield* loadParsers(wanted)
    const warnings = failed.map((e) => `${e.message}; the rollback's ${e.language} files were merged by lines only`)
    const syntax = yield* syntaxOf(loaded)
    return {
      applied,
      warnings,
      input: {
        changes,
        live: (p: RelativePath) => live.get(p) ?? ({ _tag: "Missing" } satisfies FileState),
        blob: (h: Sha256Hash) => blobs.get(h),
        labels: rollbackMarkerLabels(transactionId),
        syntax
      }
    }
  })

const blobsByHash = (hashes: ReadonlyArray<Sha256Hash>) =>
  Effect.gen(function*() {
    const history = yield* HistoryContent
    const blobs = new Map<string, Uint8Array>()
    for (const h of hashes) {
      // Retention dropped it: the rollback cannot restore it (not a store failure to retry).
      const bytes = yield* history.getBlob(h).pipe(Effect.mapError((e) => (e.reason === "Pruned" ? pruned(h, e) : storeFailure("Reading a snapshot")(e))))
      if (Option.isSome(bytes)) blobs.set(h, bytes.value)
    }
    return blobs
  })

const pruned = (hash: Sha256Hash, cause: { readonly message: string }) =>
  new OrchestratorError({
    code: "rollback_unavailable",
    paths: [],
    message: `The earlier content this rollback needs (${hash}) was dropped by retention (forkjoin gc ` +
      "--prune-snapshots-older-than), so it cannot be restored; nothing was written. Restore the file from version control instead.",
    cause
  })

const unavailable = (paths: ReadonlyArray<string>) =>
  new OrchestratorError({
    code: "rollback_unavailable",
    paths,
    message: `The history does not hold the earlier content of ${paths.join(", ")} for this transaction, so it cannot be ` +
      "restored; nothing was written."
  })

/**
 * Rolls back `transactionId` in `threadId`'s name; resolves to the rollback's record and the
 * paths merged with later work. Not clean on some path: fails with `rollback_conflicted` after
 * holding those paths as conflicts (asking again merges afresh and replaces them).
 *
 * @category constructors
 * @since 0.1.0
 */
export const rollback = Effect.fn("Rollback.rollback")(function*(
  transactionId: TransactionId,
  options: { readonly threadId: ThreadId; readonly strict?: boolean }
) {
  const engine = yield* Engine
  const store = yield* MergeStore
  const standing = yield* standingRollbackOf(transactionId)
  if (standing !== undefined) {
    const closing = closingOf(transactionId)
    return yield* new OrchestratorError({
      code: "rollback_unavailable",
      paths: [],
      message: `Transaction ${transactionId} was already rolled back by ${closing} (committed ${standing.committedAt}); there is nothing ` +
        `to roll back. To redo it, roll back ${closing}.`
    })
  }
  // Every held conflict resolved but the rollback never applied (its last resolve stopped first):
  // finished from those resolutions; one the live files no longer fit is merged afresh below.
  const finished = yield* finishHeld(transactionId).pipe(Effect.catchIf((e) => e instanceof OrchestratorError && e.code === "conflict_stale", () => Effect.succeed(undefined)))
  if (finished !== undefined) return finished
  const { applied, input, warnings } = yield* loadTransaction(transactionId)
  const planned = planRollback({ ...input, strict: options.strict === true })
  switch (planned._tag) {
    case "Unavailable":
      return yield* unavailable(planned.paths)
    case "Drift": {
      const later = yield* laterTransaction(applied, planned.paths)
      const how = options.strict === true
        ? "Roll back the later change first, edit the files by hand, or roll back without --strict to merge."
        : "A moved file or a path that is no longer a regular file cannot be merged back: roll back the later change first, or edit the files by hand."
      return yield* new OrchestratorError({
        code: "rollback_drift",
        paths: planned.paths,
        message: `${planned.paths.join(", ")} changed after ${transactionId}${later === undefined ? "" : ` (by ${later})`}; nothing was written. ${how}`,
        ...(later === undefined ? {} : { laterTransactionId: later })
      })
    }
    case "Stale":
      // Only a plan given resolutions can be stale.
      return yield* Effect.die(new Error("a rollback planned without resolutions is never stale"))
    case "Conflicted": {
      // A conflict id is at most 256 characters: a rollback whose ids would be longer cannot be held.
      const unheld = planned.conflicts.filter((c) => Result.isFailure(Schema.decodeUnknownResult(ConflictId)(`rollback:${transactionId}:${c.path}`)))
      if (unheld.length > 0) {
        return yield* new OrchestratorError({
          code: "rollback_drift",
          paths: unheld.map((c) => c.path),
          message: `${unheld.map((c) => c.path).join(", ")} changed after ${transactionId} and the rollback does not merge there, but ` +
            "its conflict id would be longer than 256 characters, so it cannot be held; nothing was written. Edit the files by hand."
        })
      }
      const conflicts = yield* heldConflictRecords(planned.conflicts, (c) => ({
        conflictId: rollbackConflictIdOf(transactionId, c.path),
        kind: "rollback",
        transactionId,
        threadId: options.threadId
      }))
      yield* store.holdRollback(engine.environmentId, transactionId, conflicts).pipe(Effect.mapError(storeFailure("Holding the rollback's conflicts")))
      const ids = conflicts.map((c) => c.conflictId)
      return yield* new OrchestratorError({
        code: "rollback_conflicted",
        paths: conflicts.map((c) => c.path),
        message: `Rolling back ${transactionId} does not merge with later changes at ${conflicts.map((c) => c.path).join(", ")}; ` +
          `nothing was written. Resolve each held conflict (${ids.join(", ")}) with 'forkjoin resolve CONFLICT_ID ` +
          "--apply|--discard|--content FILE' ('forkjoin conflicts' shows them); the whole rollback is applied when the last is resolved.",
        conflictIds: ids
      })
    }
    case "Ready": {
      if (planned.plan.files.length === 0) {
        return yield* new OrchestratorError({
          code: "rollback_unavailable",
          paths: [],
          message: `Transaction ${transactionId} changed nothing in the end, or every path it changed already holds its earlier ` +
            "content; there is nothing to roll back."
        })
      }
      const record = yield* apply(transactionId, options.threadId, planned)
      // A held attempt of this rollback is superseded by the one applied.
      yield* store.holdRollback(engine.environmentId, transactionId, []).pipe(Effect.mapError(storeFailure("Dropping the rollback's held conflicts")))
      return { record, merged: planned.merged, warnings } satisfies RolledBack
    }
  }
})

/**
 * Rolls back `transactionId` in `threadId`'s name; resolves to the rollback's record (see
 * `rollback`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const rollbackTransaction = (transactionId: TransactionId, options: { readonly threadId: ThreadId; readonly strict?: boolean }) =>
  Effect.map(rollback(transactionId, options), (r) => r.record)

const apply = (transactionId: TransactionId, threadId: ThreadId, planned: Extract<RollbackPlanOutcome, { _tag: "Ready" }>) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    return yield* engine.applyPlan({
      threadId,
      turnId: ROLLBACK_TURN,
      transactionId: TransactionId.make(`rollback:${transactionId}`),
      // Every `before` is the live content the plan was made from, re-checked under the lock.
      grant: Grants.full,
      links: { rollbackOf: transactionId },
      plan: planned.plan
    })
  })

/**
 * Resolves one held conflict of a rollback. The resolution is first checked against the live
 * file with those already recorded (a `content` kept in history), then recorded in one store
 * transaction that also tells whether it closed the rollback's last open conflict: so of
 * racing resolutions exactly one sees that, and only it applies the whole rollback, every
 * resolution included, as one transaction `rollback:<id>` (see `finishHeld`). Resolves to that
 * record, when written, and how many of the rollback's conflicts are still open.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolveHeld = Effect.fn("Rollback.resolveHeld")(function*(conflict: ConflictRecord, resolution: HeldResolution) {
  const store = yield* MergeStore
  const history = yield* HistoryContent
  const owner = ownerOf(conflict)
  if (owner.kind !== "rollback") return yield* Effect.die(new Error(`conflict ${conflict.conflictId} is not a rollback's`))
  const { transactionId } = owner
  const held = yield* heldOf(transactionId)
  const open = held.filter((c) => c.status === "open" && c.conflictId !== conflict.conflictId)
  let content: ConflictRecord["theirs"]
  if (resolution.kind === "content") {
    yield* history.putBlobs([resolution.bytes]).pipe(Effect.mapError(storeFailure("Storing the resolution's content")))
    content = snapshotOf(resolution.bytes, 0o644)
  }
  const resolved = yield* resolutionsOf(held.filter((c) => c.status === "resolved" && c.conflictId !== conflict.conflictId))
  resolved.set(conflict.path, resolutionOf(conflict, resolution.kind, resolution.kind === "content" ? resolution.bytes : undefined))

  // Refused here, before anything is recorded, when it no longer fits the live files.
  const { input } = yield* loadTransaction(transactionId)
  const planned = planRollback({ ...input, resolved })
  if (planned._tag === "Conflicted") {
    const fresh = planned.conflicts.filter((c) => !open.some((o) => o.path === c.path))
    if (fresh.length > 0) return yield* stale(transactionId, fresh.map((c) => c.path), "it no longer merges cleanly")
  } else if (planned._tag !== "Ready") {
    return yield* refusalOf(transactionId, planned)
  }
  const recorded = yield* store.resolveRollbackConflict(conflict.conflictId, {
    kind: resolution.kind,
    ...(content === undefined ? {} : { content }),
    resolvedAt: yield* now
  }, closingOf(transactionId)).pipe(
    Effect.catchIf((e) => e.reason === "Constraint" || e.reason === "NotFound", (e) =>
      new OrchestratorError({
        code: "conflict_already_resolved",
        paths: [conflict.path],
        message: `Conflict '${conflict.conflictId}' was resolved by another resolve first, or the rollback was asked for again; nothing was ` +
          "written. 'forkjoin conflicts' shows where it stands.",
        cause: e
      })),
    Effect.mapError((e) => (e instanceof OrchestratorError ? e : storeFailure("Recording the resolution")(e)))
  )
  if (recorded.open > 0) return { record: undefined, transactionId, open: recorded.open }
  yield* Fault.atResolve("after-claim")
  const finished = yield* finishHeld(transactionId)
  // Nothing to finish: it had nothing to write, or a `forkjoin rollback` racing this one applied it.
  const record = finished?.record ?? (yield* landedSince(transactionId, yield* heldOf(transactionId)))
  return { record, transactionId, open: 0 }
})

/**
 * Applies the held rollback of `transactionId` once every one of its conflicts is resolved and
 * it was not applied yet (the resolve that closed the last one applies it; one killed before
 * leaves it to the next `forkjoin rollback` or `resolve`): the rollback planned from the
 * stored resolutions, as one transaction `rollback:<id>`. Resolves to nothing when there is no
 * such rollback (none held, some conflict open, or applied since they were held: never
 * twice) or it had nothing left to write; to the other's record when a racing process applied
 * it first. A plan the live files no longer fit reopens the last resolution, so the rollback
 * can be resolved again or asked for afresh, and fails `conflict_stale`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const finishHeld = Effect.fn("Rollback.finishHeld")(function*(transactionId: TransactionId) {
  const store = yield* MergeStore
  const held = yield* heldOf(transactionId)
  if (held.length === 0 || held.some((c) => c.status === "open")) return undefined
  if ((yield* landedSince(transactionId, held)) !== undefined) return undefined
  const last = held.find((c) => c.resolution?.transactionId === closingOf(transactionId)) ??
    held.reduce((a, b) => ((b.resolution?.resolvedAt ?? "") > (a.resolution?.resolvedAt ?? "") ? b : a))
  // Open again, so `forkjoin rollback` merges afresh instead of finishing a rollback that no longer fits.
  const reopen = store.reopenConflict(last.conflictId, closingOf(transactionId)).pipe(Effect.mapError(storeFailure("Reopening a conflict")))
  const owner = ownerOf(last)
  if (owner.kind !== "rollback") return yield* Effect.die(new Error(`conflict ${last.conflictId} is not a rollback's`))
  const { input, warnings } = yield* loadTransaction(transactionId)
  const planned = planRollback({ ...input, resolved: yield* resolutionsOf(held) })
  if (planned._tag !== "Ready") {
    yield* reopen
    return yield* planned._tag === "Conflicted"
      ? stale(transactionId, planned.conflicts.map((c) => c.path), "it no longer merges cleanly")
      : refusalOf(transactionId, planned)
  }
  if (planned.plan.files.length === 0) return undefined
  const record = yield* apply(transactionId, owner.threadId, planned).pipe(
    // Refused because another process applied it first (its `before`s no longer hold): that one stands.
    Effect.catch((e) =>
      Effect.flatMap(landedSince(transactionId, held), (other) => (other === undefined ? Effect.andThen(reopen, Effect.fail(e)) : Effect.succeed(other)))
    )
  )
  return { record, merged: planned.merged, warnings } satisfies RolledBack
})

/**
 * The transactions whose held rollback has every conflict resolved but was not applied (the
 * resolve that closed the last one stopped first) and still has something to write, or no
 * longer fits the files: `forkjoin rollback TX` finishes (or re-merges) each.
 *
 * @category constructors
 * @since 0.1.0
 */
export const unfinished = Effect.gen(function*() {
  const engine = yield* Engine
  const store = yield* MergeStore
  const resolved = yield* store.listConflicts({ environmentId: engine.environmentId, status: "resolved" }).pipe(
    Effect.mapError(storeFailure("Listing resolved conflicts"))
  )
  const held = [...new Set(resolved.flatMap((c) => {
    const owner = ownerOf(c)
    return owner.kind === "rollback" ? [owner.transactionId] : []
  }))]
  const out: Array<TransactionId> = []
  for (const transactionId of held) {
    const conflicts = yield* heldOf(transactionId)
    if (conflicts.some((c) => c.status === "open") || (yield* landedSince(transactionId, conflicts)) !== undefined) continue
    const planned = yield* Effect.result(Effect.gen(function*() {
      const { input } = yield* loadTransaction(transactionId)
      return planRollback({ ...input, resolved: yield* resolutionsOf(conflicts) })
    }))
    // Every resolution kept the files as they are: the rollback is done, with nothing to write.
    if (Result.isSuccess(planned) && planned.success._tag === "Ready" && planned.success.plan.files.length === 0) continue
    out.push(transactionId)
  }
  return out
})

/** The transaction that applies the rollback of `transactionId`. */
const closingOf = (transactionId: TransactionId) => TransactionId.make(`rollback:${transactionId}`)

/**
 * The record of the rollback that undid `transactionId` and still stands, if any: the latest
 * `rollback:<id>` applied, unless that rollback was itself rolled back since (a redo), which
 * lets the transaction be rolled back again.
 */
const standingRollbackOf = (transactionId: TransactionId): Effect.Effect<PatchHistoryRecord | undefined, OrchestratorError, Engine | HistoryRecords> =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryRecords
    const closing = closingOf(transactionId)
    const records = yield* history.recordsByTransaction(engine.environmentId, closing).pipe(Effect.mapError(storeFailure("Reading the rollback's transaction")))
    const latest = records.filter((r) => r.outcome === "applied").at(-1)
    if (latest === undefined) return undefined
    // The rollback of `closing` would have an id longer than ids may be: it was never made.
    if (Result.isFailure(Schema.decodeUnknownResult(TransactionId)(`rollback:${closing}`))) return latest
    const redo = yield* standingRollbackOf(closing)
    return redo !== undefined && redo.committedAt >= latest.committedAt ? undefined : latest
  })

/** The conflicts held for the rollback of `transactionId`, open and resolved. */
const heldOf = (transactionId: TransactionId) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const store = yield* MergeStore
    return yield* store.listConflicts({ environmentId: engine.environmentId, rollbackOf: transactionId }).pipe(
      Effect.mapError(storeFailure("Listing the rollback's conflicts"))
    )
  })

/**
 * The record of `rollback:<id>` committed since `held` were held, if any: one committed before
 * them undid an earlier state of the files (the transaction was rolled back, redone, and is
 * rolled back again), not this one.
 */
const landedSince = (transactionId: TransactionId, held: ReadonlyArray<ConflictRecord>) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryRecords
    if (held.length === 0) return undefined
    const since = held.reduce((a, c) => (c.createdAt < a ? c.createdAt : a), held[0]!.createdAt)
    const records = yield* history.recordsByTransaction(engine.environmentId, closingOf(transactionId)).pipe(
      Effect.mapError(storeFailure("Reading the rollback's transaction"))
    )
    return records.filter((r) => r.outcome === "applied" && r.committedAt >= since).at(-1)
  })

/** The stored resolutions of resolved `conflicts`, as the planner takes them (a `content` read back from history). */
const resolutionsOf = (conflicts: ReadonlyArray<ConflictRecord>) =>
  Effect.gen(function*() {
    const stored = yield* blobsByHash(conflicts.flatMap((c) => (c.resolution?.content === undefined ? [] : [c.resolution.content.hash])))
    const resolved = new Map<RelativePath, RollbackResolution>()
    for (const c of conflicts) {
      if (c.resolution === undefined) continue
      const bytes = c.resolution.content === undefined ? undefined : stored.get(c.resolution.content.hash)
      if (c.resolution.kind === "content" && bytes === undefined) return yield* unavailable([c.path])
      resolved.set(c.path, resolutionOf(c, c.resolution.kind, bytes))
    }
    return resolved
  })

const stale = (transactionId: TransactionId, paths: ReadonlyArray<string>, why: string) =>
  new OrchestratorError({
    code: "conflict_stale",
    paths,
    message: `${paths.join(", ")} changed since the rollback was held (${why}); nothing was written. ` +
      `Run 'forkjoin rollback ${transactionId}' again to merge it afresh (its held conflicts are replaced).`
  })

/** Why a plan given resolutions cannot be applied. */
const refusalOf = (transactionId: TransactionId, planned: Exclude<RollbackPlanOutcome, { _tag: "Ready" | "Conflicted" }>) =>
  planned._tag === "Unavailable"
    ? unavailable(planned.paths)
    : planned._tag === "Drift"
    ? stale(transactionId, planned.paths, "it can no longer be merged")
    : stale(transactionId, [planned.path], planned.why)

/** A stored or given resolution as the planner takes it. */
const resolutionOf = (c: ConflictRecord, kind: HeldResolution["kind"], bytes: Uint8Array | undefined): RollbackResolution => {
  switch (kind) {
    case "discard":
      return { kind }
    case "apply":
      // Text conflicts take the earlier side of their hunks only; any other the earlier file whole.
      return { kind, hunks: c.reason === "overlapping_edits" ? c.hunks : [], ours: c.ours?.hash }
    case "content":
      return { kind, bytes: bytes ?? new Uint8Array(0), ours: c.ours?.hash }
  }
}

/** The first transaction after `records` that changed one of `paths`, when history shows one. */
const laterTransaction = (records: ReadonlyArray<PatchHistoryRecord>, paths: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryRecords
    const wanted = new Set(paths)
    let after = Math.max(...records.map((r) => r.commitOrdinal))
    for (;;) {
      const page = yield* history.recordsAfter(engine.environmentId, after, PAGE).pipe(Effect.orElseSucceed(() => []))
      for (const r of page) {
        if (r.changes.some((c) => wanted.has(c.path) || (c.moveFrom !== undefined && wanted.has(c.moveFrom)))) return r.transactionId
      }
      if (page.length < PAGE) return undefined
      after = page[page.length - 1]!.commitOrdinal
    }
  })
