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
import { HistoryStore } from "@forkjoin/history/HistoryStore"
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
    const history = yield* HistoryStore
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
    const history = yield* HistoryStore
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
 * Resolves one held conflict of a rollback. While others of it are open, the resolution is
 * checked against the live file and recorded (a `content` kept in history); nothing is
 * written. The last one applies the whole rollback, every resolution included, as one
 * transaction `rollback:<id>`. Resolves to that record, when written, and how many of the
 * rollback's conflicts are still open.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolveHeld = Effect.fn("Rollback.resolveHeld")(function*(conflict: ConflictRecord, resolution: HeldResolution) {
  const engine = yield* Engine
  const store = yield* MergeStore
  const history = yield* HistoryStore
  const owner = ownerOf(conflict)
  if (owner.kind !== "rollback") return yield* Effect.die(new Error(`conflict ${conflict.conflictId} is not a rollback's`))
  const { threadId, transactionId } = owner
  const held = yield* store.listConflicts({ environmentId: engine.environmentId, rollbackOf: transactionId }).pipe(
    Effect.mapError(storeFailure("Listing the rollback's conflicts"))
  )
  const open = held.filter((c) => c.status === "open" && c.conflictId !== conflict.conflictId)
  let content: ConflictRecord["theirs"]
  if (resolution.kind === "content") {
    yield* history.putBlobs([resolution.bytes]).pipe(Effect.mapError(storeFailure("Storing the resolution's content")))
    content = snapshotOf(resolution.bytes, 0o644)
  }
  const closed = held.filter((c) => c.status === "resolved" && c.conflictId !== conflict.conflictId)
  const stored = yield* blobsByHash(closed.flatMap((c) => (c.resolution?.content === undefined ? [] : [c.resolution.content.hash])))
  const resolved = new Map<RelativePath, RollbackResolution>()
  for (const c of closed) {
    if (c.resolution === undefined) continue
    const bytes = c.resolution.content === undefined ? undefined : stored.get(c.resolution.content.hash)
    if (c.resolution.kind === "content" && bytes === undefined) return yield* unavailable([c.path])
    resolved.set(c.path, resolutionOf(c, c.resolution.kind, bytes))
  }
  resolved.set(conflict.path, resolutionOf(conflict, resolution.kind, resolution.kind === "content" ? resolution.bytes : undefined))

  const { input } = yield* loadTransaction(transactionId)
  const planned = planRollback({ ...input, resolved })
  const again = `Run 'forkjoin rollback ${transactionId}' again to merge it afresh (its held conflicts are replaced).`
  const stale = (paths: ReadonlyArray<string>, why: string) =>
    new OrchestratorError({ code: "conflict_stale", paths, message: `${paths.join(", ")} changed since the rollback was held (${why}); nothing was written. ${again}` })
  let record: PatchHistoryRecord | undefined
  switch (planned._tag) {
    case "Unavailable":
      return yield* unavailable(planned.paths)
    case "Drift":
      return yield* stale(planned.paths, "it can no longer be merged")
    case "Stale":
      return yield* stale([planned.path], planned.why)
    case "Conflicted": {
      const fresh = planned.conflicts.filter((c) => !open.some((o) => o.path === c.path))
      if (fresh.length > 0) return yield* stale(fresh.map((c) => c.path), "it no longer merges cleanly")
      break
    }
    case "Ready":
      // With others open (which may merge by now), nothing is written yet.
      if (open.length === 0 && planned.plan.files.length > 0) record = yield* apply(transactionId, threadId, planned)
  }
  yield* store.resolveConflict(conflict.conflictId, {
    kind: resolution.kind,
    ...(record === undefined ? {} : { transactionId: record.transactionId }),
    ...(content === undefined ? {} : { content }),
    resolvedAt: yield* now
  }).pipe(Effect.mapError(storeFailure("Recording the resolution")))
  return { record, transactionId, open: open.length }
})

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
    const history = yield* HistoryStore
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
