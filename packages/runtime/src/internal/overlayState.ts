/**
 * The state of one overlay as a single immutable value, and the pure transitions over it:
 * first-touch baselines (with what the engine's inspection said: mode, snapshot facts),
 * staged content, the log of staged changes, staged-file counts below directories and cached
 * shared listings. `view` answers a path from the state alone, `stage` records a plan,
 * `netChanges` folds the log (the shared `NetChange` fold, per path) into the export's entries.
 *
 * Owns no I/O, no locking and no engine calls: `Overlay.ts` is the shell that inspects the
 * workspace, feeds the results in and exports. Transitions copy only the collections they
 * change, so a session (at most a few thousand actions) stays cheap.
 */
import type { Inspection } from "@forkjoin/engine/Engine"
import { type FileState, NetChange, type Plan, type PlannedFile, sameBytes } from "@forkjoin/patch"
import type { ChangesetEntry } from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import type { DirEntry } from "../Overlay.ts"

/** A staged path: its final content, or deleted. */
export type Staged = { readonly _tag: "File"; readonly bytes: Uint8Array } | { readonly _tag: "Missing" }

/**
 * A path's shared state at the child's first touch. `inspection` is the engine's answer when
 * the overlay asked it (mode and memoized facts of a file); a baseline the view implied (absent
 * below an absent path) has none.
 */
export interface Baseline {
  readonly state: FileState
  readonly inspection: Pick<Inspection, "mode" | "facts"> | undefined
}

/** Everything an overlay knows; `empty` before the first touch and after export or discard. */
export interface OverlayState {
  /** Shared state at first touch (File, Missing, Directory or Other). */
  readonly base: ReadonlyMap<string, Baseline>
  /** The child's writes: final content or deletion, per path (insertion order is staging order). */
  readonly staged: ReadonlyMap<string, Staged>
  /** Directory → number of staged files below it (directory checks cost O(depth), not O(staged)). */
  readonly stagedFilesBelow: ReadonlyMap<string, number>
  /** Every staged change in order (the export folds it; tags number the staged plans). */
  readonly steps: ReadonlyArray<NetChange.Step<Uint8Array, number>>
  /** Shared directory listings at first list (repeatable like reads). */
  readonly listings: ReadonlyMap<string, ReadonlyArray<DirEntry>>
}

/** The state of an overlay that touched nothing. */
export const empty: OverlayState = {
  base: new Map(),
  staged: new Map(),
  stagedFilesBelow: new Map(),
  steps: [],
  listings: new Map()
}

/** The view of an absent path. */
export const MISSING: FileState & Staged = { _tag: "Missing" }
const DIRECTORY: FileState = { _tag: "Directory" }


/** `a`, `a/b` for `a/b/c`: the directories a path goes through. */
export const ancestorsOf = (p: string): ReadonlyArray<string> => {
  const segments = p.split("/")
  return segments.slice(0, -1).map((_, i) => segments.slice(0, i + 1).join("/"))
}

const throughFile = (p: string, a: string) =>
  new EngineError({
    code: "path_invalid",
    stage: Stage.resolve,
    paths: [p],
    message: `Path '${p}' goes through '${a}', which is a file in this workspace view; fix the path.`
  })

/**
 * The baseline of `p` implied by what the state already saw on the way down: absent below an
 * absent path or a deleted file, an error through a file; `undefined` means read it.
 */
export const derivedBase = (state: OverlayState, p: string): FileState | EngineError | undefined => {
  for (const a of ancestorsOf(p)) {
    const sa = state.staged.get(a)
    if (sa?._tag === "File") return throughFile(p, a)
    if (sa?._tag === "Missing") return MISSING
    const ba = state.base.get(a)?.state
    if (ba?._tag === "File") return throughFile(p, a)
    if (ba?._tag === "Missing") return MISSING
  }
  return undefined
}

/**
 * The view of `p` from the state alone, or `undefined` when the shared workspace must be
 * read. Staged files below `p` make it a directory; a file (or a deleted file) on the way
 * down decides for everything below it.
 */
export const view = (state: OverlayState, p: string): FileState | EngineError | undefined => {
  if ((state.stagedFilesBelow.get(p) ?? 0) > 0) return DIRECTORY
  return state.staged.get(p) ?? derivedBase(state, p) ?? state.base.get(p)?.state
}

/**
 * Which of `paths` still need a baseline: those the view implies (`derived`, recorded as they
 * are) and those only the workspace can answer (`unknown`). Paths that already have one, or
 * whose view is an error, are in neither.
 */
export const pendingBaselines = (
  state: OverlayState,
  paths: ReadonlyArray<string>
): { readonly derived: ReadonlyArray<readonly [string, FileState]>; readonly unknown: ReadonlyArray<string> } => {
  const derived: Array<readonly [string, FileState]> = []
  const unknown: Array<string> = []
  for (const p of paths) {
    if (state.base.has(p)) continue
    const d = derivedBase(state, p)
    if (d === undefined) unknown.push(p)
    // What the view said at first touch is this path's baseline, even when derived.
    else if (!(d instanceof EngineError)) derived.push([p, d])
  }
  return { derived, unknown }
}

/** Records first-touch baselines; a path that already has one keeps it (repeatable reads). */
export const capture = (state: OverlayState, baselines: Iterable<readonly [string, Baseline]>): OverlayState => {
  let base: Map<string, Baseline> | undefined
  for (const [p, b] of baselines) {
    if ((base ?? state.base).has(p)) continue
    base ??= new Map(state.base)
    base.set(p, b)
  }
  return base === undefined ? state : { ...state, base }
}

/** The view of each path (absent when nothing is known), or the first path's error. */
export const viewAll = (
  state: OverlayState,
  paths: ReadonlyArray<string>
): ReadonlyMap<string, FileState> | EngineError => {
  const out = new Map<string, FileState>()
  for (const p of paths) {
    const k = view(state, p) ?? MISSING
    if (k instanceof EngineError) return k
    out.set(p, k)
  }
  return out
}

/** Records what a plan staged: content, deletions, and the changes in the log. */
export const stage = (state: OverlayState, plan: Plan): OverlayState => {
  const staged = new Map(state.staged)
  const stagedFilesBelow = new Map(state.stagedFilesBelow)
  const setStaged = (p: string, next: Staged): void => {
    const delta = (next._tag === "File" ? 1 : 0) - (staged.get(p)?._tag === "File" ? 1 : 0)
    staged.set(p, next)
    if (delta === 0) return
    for (const a of ancestorsOf(p)) {
      const n = (stagedFilesBelow.get(a) ?? 0) + delta
      if (n === 0) stagedFilesBelow.delete(a)
      else stagedFilesBelow.set(a, n)
    }
  }
  for (const f of plan.files) {
    if (f.moveFrom !== undefined) setStaged(f.moveFrom, MISSING)
    setStaged(f.path, f.after === undefined ? MISSING : { _tag: "File", bytes: f.after })
  }
  const tag = state.steps.length === 0 ? 0 : state.steps[state.steps.length - 1]!.tag + 1
  const steps = [...state.steps, ...plan.files.map((f: PlannedFile) => ({ ...f, tag }))]
  return { ...state, staged, stagedFilesBelow, steps }
}

/** True when listing `dir` starts from the shared workspace's listing (the root, or a shared directory). */
export const needsSharedListing = (state: OverlayState, dir: string): boolean =>
  dir === "" || state.base.get(dir)?.state._tag === "Directory"

/** Caches the shared listing of `dir` (first list wins, like reads). */
export const cacheListing = (state: OverlayState, dir: string, entries: ReadonlyArray<DirEntry>): OverlayState =>
  state.listings.has(dir) ? state : { ...state, listings: new Map(state.listings).set(dir, entries) }

/**
 * The names directly inside `dir` in this view: the shared listing (when there is one)
 * overridden by what the child saw or wrote, so listings agree with reads. Unsorted, unfiltered.
 */
export const knownListing = (
  state: OverlayState,
  dir: string,
  shared: ReadonlyArray<DirEntry>
): Map<string, DirEntry["kind"]> => {
  const names = new Map<string, DirEntry["kind"]>()
  for (const e of shared) names.set(e.name, e.kind)
  const prefix = dir === "" ? "" : `${dir}/`
  for (const p of new Set([...state.base.keys(), ...state.staged.keys()])) {
    if (!p.startsWith(prefix) || p.length === prefix.length) continue
    const rest = p.slice(prefix.length)
    const slash = rest.indexOf("/")
    const v = view(state, p)
    if (v === undefined || v instanceof EngineError) continue
    if (slash === -1) {
      if (v._tag === "File") names.set(rest, "file")
      else if (v._tag === "Directory") names.set(rest, "directory")
      else if (v._tag === "Missing") names.delete(rest)
    } else if (v._tag === "File" && state.staged.has(p)) {
      names.set(rest.slice(0, slash), "directory")
    }
  }
  return names
}

/** One net entry of an export, before its images are described. */
export interface Net {
  readonly kind: ChangesetEntry["kind"]
  readonly path: string
  readonly moveFrom?: string
  readonly pre?: Uint8Array
  readonly post?: Uint8Array
  readonly overwritten?: Uint8Array
}

/**
 * First preimage + last postimage per path; moves fused when the source ends absent and the
 * content travelled without a whole rewrite; no-ops dropped (`NetChange`, rule `path`).
 */
export const netChanges = (state: OverlayState): ReadonlyArray<Net> =>
  NetChange.pathChanges(NetChange.fold(state.steps, "path"), sameBytes, { moves: true, replace: true }).map((c) => ({
    kind: c.kind,
    path: c.path,
    ...(c.moveFrom === undefined ? {} : { moveFrom: c.moveFrom }),
    ...(c.before === undefined ? {} : { pre: c.before }),
    ...(c.after === undefined ? {} : { post: c.after }),
    ...(c.overwritten === undefined ? {} : { overwritten: c.overwritten })
  }))
