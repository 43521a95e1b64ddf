/**
 * What the pure planner needs about one child, read from the world: the live files (through
 * the engine's resolver), the child's postimage blobs, the merge bases of paths an earlier
 * sibling changed (from history, or from disk in an atomic join), and the parsers of the
 * languages of files both sides edited (loaded only then). Drifted paths are recorded as gaps.
 */
import { Engine, type Inspection } from "@forkjoin/engine/Engine"
import * as Fault from "@forkjoin/engine/Fault"
import * as Gaps from "@forkjoin/history/Gaps"
import { HistoryContent } from "@forkjoin/history/HistoryStore"
import { type ChildPlanOutcome, joinMarkerLabels, planChild } from "@forkjoin/merge/ChildPlan"
import type { GrammarError } from "@forkjoin/merge/Grammars"
import { type Language, languageOfPath } from "@forkjoin/merge/Syntax"
import type { FileState } from "@forkjoin/patch"
import { sha256 } from "@forkjoin/patch/Bytes"
import * as BlobStore from "@forkjoin/runtime/BlobStore"
import type { Changeset, ChangesetEntry, MergeRun, RecordWarning, RelativePath, Sha256Hash, TaskId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import { childThread, type JoinChild, JOIN_TURN } from "./model.ts"
import { loadParsers, syntaxOf } from "./syntax.ts"

/**
 * A child's plan, with `warnings` about how it was merged (a grammar that could not be loaded:
 * its files were merged by lines).
 */
export type Planned = ChildPlanOutcome & { readonly warnings?: ReadonlyArray<RecordWarning> }

/**
 * Reads what `planChild` needs (live files, blobs, preimages of sibling-changed paths, parsers)
 * and calls it.
 */
export const planFor = (
  changeset: Changeset,
  child: JoinChild,
  changed: ReadonlySet<RelativePath>,
  overrides: ReadonlyMap<string, FileState> = new Map()
) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryContent
    const paths = [...new Set(changeset.entries.flatMap((e) => (e.moveFrom === undefined ? [e.path] : [e.moveFrom, e.path])))]
    // Per path: a path the engine refuses to resolve (a symlink out, a denied name) reads as
    // something that can never match a preimage, so the child is drift, never written.
    const inspected = yield* engine.inspect(paths).pipe(Effect.orElseSucceed(() => new Map<string, Result.Result<Inspection, unknown>>()))
    const live = new Map<string, FileState>()
    for (const p of paths) {
      const r = inspected.get(p)
      live.set(p, r !== undefined && Result.isSuccess(r) ? r.success.state : { _tag: "Other", description: "unreadable" })
    }
    // The files as they are on disk, before an atomic join's earlier children (the overrides).
    const onDisk = new Map(live)
    for (const [p, state] of overrides) live.set(p, state)
    const blobs = yield* BlobStore.makeDirectory(child.blobDirectory, { fsync: false }).pipe(Effect.orElseSucceed(() => undefined))
    const post = new Map<string, Uint8Array>()
    for (const e of changeset.entries) {
      if (e.postimage === undefined || blobs === undefined) continue
      const bytes = yield* blobs.get(e.postimage.hash).pipe(Effect.result)
      if (Result.isSuccess(bytes)) post.set(e.postimage.hash, bytes.success)
      else if (bytes.failure.reason === "Unsafe") {
        return { _tag: "Invalid", paths: [e.path], reason: `the postimage blob of ${e.path} (${e.postimage.hash}) was not read: ${bytes.failure.detail ?? "it is not a regular file"}; blobs must be regular files` } satisfies ChildPlanOutcome
      } else if (bytes.failure.reason === "Corrupt") {
        return {
          _tag: "Invalid",
          paths: [e.path],
          reason: `the postimage blob of ${e.path} (${e.postimage.hash}) does not hold the bytes its hash names`
        } satisfies ChildPlanOutcome
      }
    }
    const pre = new Map<string, Uint8Array>()
    for (const e of changeset.entries) {
      const source = e.moveFrom ?? e.path
      if (!(changed.has(source) || changed.has(e.path))) continue
      // The bases of a merge: the child's preimage, and what a move overwrote at its destination.
      for (const [image, at] of [[e.preimage, source], [e.overwritten, e.path]] as const) {
        if (image === undefined || pre.has(image.hash)) continue
        const bytes = yield* history.getBlob(image.hash).pipe(Effect.option, Effect.map(Option.flatten))
        if (Option.isSome(bytes)) pre.set(image.hash, bytes.value)
        else {
          // Not in history yet (an atomic join writes nothing before its one transaction): the
          // file on disk is the base when it still hashes to the image.
          const disk = onDisk.get(at)
          if (disk?._tag === "File" && sha256(disk.bytes) === image.hash) pre.set(image.hash, disk.bytes)
        }
      }
    }
    const parsers = yield* parsersFor(changeset.entries, changed, live)
    const syntax = yield* syntaxOf(parsers.loaded)
    const planned: Planned = planChild({
      entries: (yield* Fault.skipBaseline) ? changeset.entries.map((e) => withLiveBaseline(e, live, changed)) : changeset.entries,
      live: (p) => live.get(p) ?? { _tag: "Other", description: "unreadable" },
      postimage: (h: Sha256Hash) => post.get(h),
      preimage: (h: Sha256Hash) => pre.get(h),
      changedBySiblings: changed,
      labels: joinMarkerLabels(child.id),
      syntax
    })
    return parsers.warnings.length === 0 ? planned : { ...planned, warnings: parsers.warnings }
  })

/**
 * The parsers of the languages of the files this child and an earlier sibling both edited
 * (the live file is neither the child's preimage nor its postimage), loaded through `Grammars`
 * only for those: a join without such a file loads none. No `Grammars` service: none. A grammar
 * that fails to load gives one warning naming it, and its files are merged by lines.
 */
const parsersFor = (entries: ReadonlyArray<ChangesetEntry>, changed: ReadonlySet<RelativePath>, live: ReadonlyMap<string, FileState>) =>
  Effect.gen(function*() {
    const wanted = new Set<Language>()
    for (const e of entries) {
      const base = e.kind === "move" ? e.overwritten : e.preimage
      const language = languageOfPath(e.path)
      const state = live.get(e.path)
      if (language === undefined || !changed.has(e.path) || base === undefined || e.postimage === undefined || state?._tag !== "File") continue
      const hash = sha256(state.bytes)
      if (hash !== base.hash && hash !== e.postimage.hash) wanted.add(language)
    }
    const { loaded, failed } = yield* loadParsers(wanted)
    return { loaded, warnings: failed.map(grammarWarning) }
  })

const grammarWarning = (e: GrammarError): RecordWarning => ({
  code: "grammar_unavailable",
  message: `${e.message}; this child's ${e.language} files were merged by lines only`
})

/**
 * Test-only fault injection (`join:skip-baseline`, see `@forkjoin/engine/Fault`): the entry with
 * the live file as its preimage, where no sibling changed the path, so a drifted child passes
 * both the planner's check and the engine's `before` check and overwrites the outside edit. It
 * exists only so the merge probe can show it reports a broken join.
 */
const withLiveBaseline = (e: ChangesetEntry, live: ReadonlyMap<string, FileState>, changed: ReadonlySet<RelativePath>): ChangesetEntry => {
  const state = live.get(e.path)
  if (e.kind === "move" || e.preimage === undefined || changed.has(e.path) || state?._tag !== "File") return e
  return { ...e, preimage: { ...e.preimage, hash: sha256(state.bytes), bytes: state.bytes.length } }
}

/**
 * Records each drifted path as a `gap` (an outside change history did not see): compared with
 * history's last content, or with the child's preimage when history never saw the path.
 * Best effort: a failure here never changes the child's outcome.
 */
export const recordGaps = (run: MergeRun, childId: TaskId, changeset: Changeset, paths: ReadonlyArray<RelativePath>) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    for (const p of paths) {
      const entry = changeset.entries.find((e) => (e.moveFrom ?? e.path) === p || e.path === p)
      const pre = entry?.preimage !== undefined && (entry.moveFrom ?? entry.path) === p ? entry.preimage : undefined
      const known = pre === undefined
        ? (entry?.kind === "add" && entry.path === p ? "absent" as const : undefined)
        : { hash: pre.hash, bytes: pre.bytes, encoding: pre.encoding, lineEnding: pre.lineEnding, finalNewline: pre.finalNewline, mode: pre.mode ?? 0o644 }
      yield* Gaps.detectGap(
        { environmentId: engine.environmentId, root: engine.root },
        { caller: childThread(run.runId, childId), turnId: JOIN_TURN, path: p, ...(known === undefined ? {} : { known }) }
      ).pipe(Effect.ignore)
    }
  })
