/**
 * Startup repair (SPEC §4.5). Runs under the workspace lock, so every open intent it sees
 * belongs to a process that died between journaling and closing it. For each intent it
 * compares the live files with the journaled pre/post hashes:
 * all post → finish the record (`provenance: recovery`, exact); all pre → close as aborted;
 * a mix → restore pre from the stored blobs, record nothing, warn; anything else → an
 * `uncertain` record, files left alone, warn. Leftover temp files and created directories
 * of the intent are removed. Repair never invents an exact record it cannot prove.
 */
import type { HistoryStore, StoreError } from "@forkjoin/history/HistoryStore"
import { sha256 } from "@forkjoin/patch/Bytes"
import type { EnvironmentId, JournalIntent, RecordDraft } from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as path from "node:path"
import { fromStoreError } from "../HistoryFailure.ts"
import { commitStaged, stageSteps, type Step } from "./commit.ts"
import { type ResolveContext, resolveTarget } from "./resolve.ts"

/**
 * What repair did to one intent.
 *
 * @category models
 * @since 0.1.0
 */
export interface RepairOutcome {
  readonly intentId: string
  readonly transactionId: string
  readonly action: "completed" | "aborted" | "restored" | "uncertain"
  readonly paths: ReadonlyArray<string>
  readonly message: string
}

/**
 * The result of one repair pass.
 *
 * @category models
 * @since 0.1.0
 */
export interface RepairReport {
  readonly outcomes: ReadonlyArray<RepairOutcome>
}

const fail = (e: StoreError): EngineError => fromStoreError(e, 9, [], "Repair could not use the history store")

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
      const live = intent.entries.map((entry) => {
        try {
          const t = resolveTarget({ ...ctx, denied: [] }, entry.path)
          return { entry, target: t, hash: t.state._tag === "File" ? sha256(t.state.bytes) : t.state._tag === "Missing" ? null : "other" }
        } catch {
          return { entry, target: undefined, hash: "other" as const }
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
      if (live.every((l) => l.hash === l.entry.pre || l.hash === l.entry.post)) {
        // A partial commit: put the post files back to pre from the stored blobs.
        const steps: Array<Step> = []
        for (const l of live) {
          if (l.hash === l.entry.pre || l.target === undefined) continue
          let bytes: Uint8Array | undefined
          if (l.entry.pre !== null) {
            const blob = yield* store.getBlob(l.entry.pre).pipe(Effect.mapError(fail))
            if (Option.isNone(blob)) {
              return yield* new EngineError({
                code: "commit_failed",
                stage: 9,
                paths: [l.entry.path],
                message: `Repair cannot restore '${l.entry.path}': its previous content is missing from the blob store.`
              })
            }
            bytes = blob.value
          }
          steps.push({ path: l.entry.path, absolute: l.target.absolute, after: bytes, mode: l.entry.preMode, original: l.target })
        }
        yield* Effect.try({
          try: () => commitStaged(fs, stageSteps(fs, steps, `${intent.intentId}-repair`)),
          catch: (e) => (e instanceof EngineError ? e : new EngineError({ code: "commit_failed", stage: 8, paths, message: String(e), cause: e }))
        })
        yield* store.closeIntent(intent.intentId, "aborted", "repair: partial commit restored to the previous content").pipe(
          Effect.mapError(fail)
        )
        cleanup(ctx, intent)
        outcomes.push({
          ...base,
          action: "restored",
          message: `A crash left ${atPost.length} of ${live.length} files at their new content; they were restored, nothing was recorded as applied.`
        })
        continue
      }
      // Something else changed these files: say so, touch nothing.
      const unknown = live.filter((l) => l.hash !== l.entry.pre && l.hash !== l.entry.post).map((l) => l.entry.path)
      const draft: RecordDraft = {
        ...intent.draft,
        provenance: "recovery",
        exactness: "uncertain",
        outcome: "commit_state_uncertain",
        warnings: [
          ...intent.draft.warnings,
          ...unknown.map((p) => ({
            code: "commit_state_uncertain",
            message: "After a crash this file matched neither its previous nor its new content; it was left alone.",
            path: p
          }))
        ]
      }
      yield* store.closeIntent(intent.intentId, "uncertain", `repair: ${unknown.join(", ")} match neither pre nor post`).pipe(
        Effect.mapError(fail)
      )
      const now = yield* Clock.currentTimeMillis
      yield* store.appendRecord(draft, now).pipe(Effect.mapError(fail))
      cleanup(ctx, intent)
      outcomes.push({
        ...base,
        action: "uncertain",
        message: `${unknown.join(", ")} matched neither the previous nor the new content; recorded as commit_state_uncertain and left alone.`
      })
    }
    return { outcomes }
  })
