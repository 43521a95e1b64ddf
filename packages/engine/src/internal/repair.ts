/**
 * Startup repair (SPEC §4.5). Runs under the workspace lock, so every open intent it sees
 * belongs to a process that died between journaling and closing it. For each intent it
 * compares the live files with the journaled pre/post hashes:
 * all post → finish the record (`provenance: recovery`, exact); all pre → close as aborted;
 * a mix → restore pre from the stored blobs, record nothing, warn; some paths matching
 * neither (edited after the crash) → every path that is exactly pre or post goes back to pre
 * (the transaction never committed), the unexplained ones are left alone and named in a
 * `commit_state_uncertain` record, which stays listed until acknowledged. Leftover temp files
 * and created directories of the intent are removed. Repair never invents an exact record it
 * cannot prove, and never overwrites bytes it cannot explain.
 */
import type { HistoryStore, StoreError, UncertainRecord } from "@forkjoin/history/HistoryStore"
import { sha256 } from "@forkjoin/patch/Bytes"
import {
  type EnvironmentId,
  type JournalIntent,
  RecordId,
  type RecordDraft,
  RelativePath,
  TransactionId,
  UtcTimestamp
} from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import { fromStoreError } from "../HistoryFailure.ts"
import { commitStaged, stageSteps, type Step } from "./commit.ts"
import { type ResolveContext, type ResolvedTarget, resolveTarget } from "./resolve.ts"

/**
 * What repair did to one intent: `completed` (record finished), `aborted` (nothing had
 * changed), `restored` (a partial commit undone) or `uncertain` (explained paths restored,
 * unexplained ones left alone and recorded). `restored` and `unexplained` list the paths.
 *
 * @category models
 * @since 0.1.0
 */
export const RepairOutcome = Schema.Struct({
  intentId: Schema.String,
  transactionId: TransactionId,
  action: Schema.Literals(["completed", "aborted", "restored", "uncertain"]),
  /** Every path of the intent. */
  paths: Schema.Array(RelativePath),
  /** Paths put back to their previous content (`restored`, `uncertain`). */
  restored: Schema.optionalKey(Schema.Array(RelativePath)),
  /** Paths matching neither side, left alone (`uncertain`). */
  unexplained: Schema.optionalKey(Schema.Array(RelativePath)),
  /** The `commit_state_uncertain` record written, whose id acknowledges it (`uncertain`). */
  recordId: Schema.optionalKey(RecordId),
  message: Schema.String
})

/**
 * @category models
 * @since 0.1.0
 */
export type RepairOutcome = typeof RepairOutcome.Type

/**
 * The result of one repair pass.
 *
 * @category models
 * @since 0.1.0
 */
export const RepairReport = Schema.Struct({ outcomes: Schema.Array(RepairOutcome) })

/**
 * @category models
 * @since 0.1.0
 */
export type RepairReport = typeof RepairReport.Type

/**
 * A `commit_state_uncertain` outcome as `forkjoin repair` and `forkjoin status` list it: its
 * record, the paths left alone, and when it was acknowledged (absent while it needs attention).
 *
 * @category models
 * @since 0.1.0
 */
export const UncertainOutcome = Schema.Struct({
  recordId: RecordId,
  transactionId: TransactionId,
  commitOrdinal: Schema.Int,
  committedAt: UtcTimestamp,
  paths: Schema.Array(RelativePath),
  acknowledgedAt: Schema.optionalKey(UtcTimestamp)
})

/**
 * @category models
 * @since 0.1.0
 */
export type UncertainOutcome = typeof UncertainOutcome.Type

/** The outcome of a stored uncertain record: its named paths (records from older builds: its changes). */
export const uncertainOutcomeOf = (u: UncertainRecord): UncertainOutcome => {
  const named = u.record.warnings.flatMap((w) => (w.code === "commit_state_uncertain" && w.path !== undefined ? [w.path] : []))
  return {
    recordId: u.record.recordId,
    transactionId: u.record.transactionId,
    commitOrdinal: u.record.commitOrdinal,
    committedAt: u.record.committedAt,
    paths: named.length > 0 ? named : u.record.changes.map((c) => c.path),
    ...(u.acknowledgedAt === undefined ? {} : { acknowledgedAt: u.acknowledgedAt })
  }
}

const fail = (e: StoreError): EngineError => fromStoreError(e, Stage.persist, [], "Repair could not use the history store")

/** Removes the intent's temp files beside each target and the directories it created, if empty. */
const cleanup = (ctx: ResolveContext, intent: JournalIntent): void => {
  const suffix = `.fj-${intent.intentId}`
  for (const entry of intent.entries) {
    const dir = path.dirname(path.join(ctx.root, entry.path))
    let names: Array<string> = []
    try {
      names = fs.readdirSync(dir)
    } catch {
      continue
    }
    for (const name of names) {
      if (name.startsWith(`.${path.basename(entry.path)}${suffix}`) && name.endsWith(".tmp")) {
        fs.rmSync(path.join(dir, name), { force: true })
      }
    }
  }
  for (const rel of [...intent.createdDirectories].reverse()) {
    try {
      fs.rmdirSync(path.join(ctx.root, rel))
    } catch {
      // not empty (the commit went through) or already gone
    }
  }
}

/** One journaled path with what is on disk now. */
interface Live {
  readonly entry: JournalIntent["entries"][number]
  readonly target: ResolvedTarget | undefined
  /** sha256 of the file, null when absent, "other" for anything else (a directory, unreadable). */
  readonly hash: string | null
}

/** Puts every `live` path that is at its post-image (and not also at its pre-image) back to the pre-image. */
const restorePre = (
  store: HistoryStore["Service"],
  intent: JournalIntent,
  live: ReadonlyArray<Live>
): Effect.Effect<ReadonlyArray<RelativePath>, EngineError> =>
  Effect.gen(function*() {
    const steps: Array<Step> = []
    for (const l of live) {
      if (l.hash !== l.entry.post || l.hash === l.entry.pre || l.target === undefined) continue
      let bytes: Uint8Array | undefined
      if (l.entry.pre !== null) {
        const blob = yield* store.getBlob(l.entry.pre).pipe(Effect.mapError(fail))
        if (Option.isNone(blob)) {
          return yield* new EngineError({
            code: "commit_failed",
            stage: Stage.persist,
            paths: [l.entry.path],
            message: `Repair cannot restore '${l.entry.path}': its previous content is missing from the blob store.`
          })
        }
        bytes = blob.value
      }
      steps.push({ path: l.entry.path, absolute: l.target.absolute, after: bytes, mode: l.entry.preMode, original: l.target })
    }
    if (steps.length > 0) {
      const paths = steps.map((s) => s.path)
      yield* Effect.try({
        try: () => commitStaged(fs, stageSteps(fs, steps, `${intent.intentId}-repair`)),
        catch: (e) => (e instanceof EngineError ? e : new EngineError({ code: "commit_failed", stage: Stage.commit, paths, message: String(e), cause: e }))
      })
    }
    return steps.map((s) => s.path)
  })

/** Repairs every open intent of the environment. */
export const repairIntents = (deps: {
  readonly store: HistoryStore["Service"]
  readonly ctx: ResolveContext
  readonly environmentId: EnvironmentId
  readonly newFileMode: number
}): Effect.Effect<RepairReport, EngineError> =>
  Effect.gen(function*() {
    const { store, ctx, environmentId } = deps
    const intents = yield* store.openIntents(environmentId).pipe(Effect.mapError(fail))
    const outcomes: Array<RepairOutcome> = []
    for (const intent of intents) {
      const live: ReadonlyArray<Live> = intent.entries.map((entry) => {
        try {
          const t = resolveTarget({ ...ctx, denied: [] }, entry.path)
          return { entry, target: t, hash: t.state._tag === "File" ? sha256(t.state.bytes) : t.state._tag === "Missing" ? null : "other" }
        } catch {
          return { entry, target: undefined, hash: "other" }
        }
      })
      const atPost = live.filter((l) => l.hash === l.entry.post)
      const atPre = live.filter((l) => l.hash === l.entry.pre)
      const paths = intent.entries.map((e) => e.path)
      const base = { intentId: intent.intentId, transactionId: intent.transactionId, paths }
      if (atPost.length === live.length) {
        const draft: RecordDraft = {
          ...intent.draft,
          provenance: "recovery",
          warnings: [
            ...intent.draft.warnings,
            { code: "recovered_after_crash", message: "The process stopped after writing the files; repair finished this record from the journal." }
          ]
        }
        const now = yield* Clock.currentTimeMillis
        yield* store.commitIntent(intent.intentId, draft, now).pipe(Effect.mapError(fail))
        cleanup(ctx, intent)
        outcomes.push({ ...base, action: "completed", message: "All files were at their new content; the record was completed." })
        continue
      }
      if (atPre.length === live.length) {
        yield* store.closeIntent(intent.intentId, "aborted", "repair: every file was at its previous content").pipe(Effect.mapError(fail))
        cleanup(ctx, intent)
        outcomes.push({ ...base, action: "aborted", message: "No file had changed; the intent was closed without a record." })
        continue
      }
      const unexplained = live.filter((l) => l.hash !== l.entry.pre && l.hash !== l.entry.post).map((l) => l.entry.path)
      // The transaction never committed: every path that can be explained goes back to pre,
      // before anything is recorded (a crash here leaves the intent open; repair redoes it).
      const restored = yield* restorePre(store, intent, live)
      if (unexplained.length === 0) {
        yield* store.closeIntent(intent.intentId, "aborted", "repair: partial commit restored to the previous content").pipe(
          Effect.mapError(fail)
        )
        cleanup(ctx, intent)
        outcomes.push({
          ...base,
          action: "restored",
          restored,
          message: `A crash left ${atPost.length} of ${live.length} files at their new content; they were restored, nothing was recorded as applied.`
        })
        continue
      }
      cleanup(ctx, intent)
      // The record names what is left unexplained: only those changes, and the directories still there.
      const named = new Set<string>(unexplained)
      const draft: RecordDraft = {
        ...intent.draft,
        provenance: "recovery",
        exactness: "uncertain",
        outcome: "commit_state_uncertain",
        changes: intent.draft.changes.filter((c) => named.has(c.path) || (c.moveFrom !== undefined && named.has(c.moveFrom))),
        directoryEffects: intent.draft.directoryEffects.filter((d) => d.kind !== "created" || fs.existsSync(path.join(ctx.root, d.path))),
        warnings: [
          ...intent.draft.warnings,
          ...unexplained.map((p) => ({
            code: "commit_state_uncertain",
            message: "After a crash this file matched neither its previous nor its new content (edited since?); it was left alone.",
            path: p
          })),
          ...(restored.length === 0 ? [] : [{
            code: "restored_after_crash",
            message: `The transaction never committed: ${restored.length} other file(s) were at its new content and were restored to their previous content.`
          }])
        ]
      }
      const now = yield* Clock.currentTimeMillis
      const record = yield* store.commitIntent(intent.intentId, draft, now, {
        status: "uncertain",
        note: `repair: ${unexplained.join(", ")} match neither pre nor post; ${restored.length} restored`
      }).pipe(Effect.mapError(fail))
      outcomes.push({
        ...base,
        action: "uncertain",
        restored,
        unexplained,
        recordId: record.recordId,
        message: `${restored.length} file(s) were restored to their previous content; left alone, matching neither their ` +
          `previous nor their new content (recorded as commit_state_uncertain): ${unexplained.join(", ")}. Check them, ` +
          "then acknowledge the record."
      })
    }
    return { outcomes }
  })
