/**
 * Net-change folding: several changes in order (a turn's records, a child's staged patches, a
 * session's batch) become one net change per file. It is the single fold behind the history
 * `turn` view, a child's changeset export and a direct session's batch plan.
 *
 * The fold follows file identities ("lineages") through moves: a lineage starts at the first
 * change that touches a file, is carried by moves, and ends when the file is deleted or
 * replaced by a moved file. Two identity rules exist because two questions are asked:
 * - `follow` (history): a file rewritten whole in place keeps its identity, so a turn reports
 *   "moved and edited" for a moved-then-rewritten file;
 * - `path` (changesets): rewriting a path whole gives it its own identity again, so only a
 *   move whose content travelled untouched by whole writes is reported as a move.
 * Two projections read the result: `lineageChanges` (one change per file identity) and
 * `pathChanges` (one change per path: first content vs last content, moves fused when their
 * source ends absent). Pure and generic in the content type (bytes or snapshots).
 *
 * @since 0.1.0
 */
import type { ChangeKind, RelativePath } from "@forkjoin/schema"
import { byCodeUnit } from "./RelativePath.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * One change in order: `before`/`after` are the path's content before and after it
 * (`undefined` = absent); a move carries `moveFrom` and, when it replaced a file,
 * `overwritten`; an `add` onto an existing file may carry that file as `overwritten`.
 * `tag` names the change's source (a record, a patch).
 *
 * @category models
 * @since 0.1.0
 */
export interface Step<A, T> {
  readonly kind: ChangeKind
  readonly path: RelativePath
  readonly moveFrom?: RelativePath | undefined
  readonly before?: A | undefined
  readonly after?: A | undefined
  readonly overwritten?: A | undefined
  readonly tag: T
}

/**
 * Which changes keep a file's identity: `follow` keeps it through whole rewrites, `path`
 * gives a rewritten path its own identity again (see the module doc).
 *
 * @category models
 * @since 0.1.0
 */
export type IdentityRule = "follow" | "path"

/**
 * One file identity after the fold: where it started (`origin`, `undefined` when it did not
 * exist before its first change) with what content, where it ends (`path`, `undefined` when
 * it ends absent) with what content, and the tags of the changes that touched it, in order
 * without consecutive repeats.
 *
 * @category models
 * @since 0.1.0
 */
export interface Lineage<A, T> {
  readonly origin: RelativePath | undefined
  readonly before: A | undefined
  readonly path: RelativePath | undefined
  readonly after: A | undefined
  readonly tags: ReadonlyArray<T>
}

/**
 * The folded state: every lineage (ended ones first, in the order they ended, then the live
 * ones), each touched path's content before its first change (`first`, `undefined` = absent),
 * the paths written whole at least once (add, replace, move destination), and the paths that
 * still hold a moved-in file with that file's lineage (`moved`, in the order the paths first
 * received one; this order decides which move is fused when two claim one source).
 *
 * @category models
 * @since 0.1.0
 */
export interface Folded<A, T> {
  readonly lineages: ReadonlyArray<Lineage<A, T>>
  readonly first: ReadonlyMap<RelativePath, A | undefined>
  readonly wholeWrites: ReadonlySet<RelativePath>
  readonly moved: ReadonlyMap<RelativePath, Lineage<A, T>>
}

/**
 * A net change of one file identity (`lineageChanges`).
 *
 * @category models
 * @since 0.1.0
 */
export interface LineageChange<A, T> {
  readonly kind: "add" | "update" | "delete" | "move"
  readonly path: RelativePath
  readonly moveFrom?: RelativePath
  readonly before?: A
  readonly after?: A
  readonly tags: ReadonlyArray<T>
}

/**
 * A net change of one path (`pathChanges`): `before` is the first content, `after` the last;
 * a fused move carries `moveFrom` and the destination's first content as `overwritten`.
 *
 * @category models
 * @since 0.1.0
 */
export interface PathChange<A> {
  readonly kind: ChangeKind
  readonly path: RelativePath
  readonly moveFrom?: RelativePath
  readonly before?: A
  readonly after?: A
  readonly overwritten?: A
}

// -------------------------------------------------------------------------------------
// the fold
// -------------------------------------------------------------------------------------

interface MutableLineage<A, T> {
  origin: RelativePath | undefined
  before: A | undefined
  path: RelativePath | undefined
  after: A | undefined
  tags: Array<T>
}

/**
 * Folds changes, in order, into lineages under `rule`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const fold = <A, T>(steps: Iterable<Step<A, T>>, rule: IdentityRule): Folded<A, T> => {
  const live = new Map<RelativePath, MutableLineage<A, T>>()
  const ended: Array<MutableLineage<A, T>> = []
  const first = new Map<RelativePath, A | undefined>()
  const wholeWrites = new Set<RelativePath>()
  const moved = new Map<RelativePath, MutableLineage<A, T>>()
  const see = (p: RelativePath, content: A | undefined) => {
    if (!first.has(p)) first.set(p, content)
  }
  const touch = (l: MutableLineage<A, T>, tag: T) => {
    if (l.tags.length === 0 || l.tags[l.tags.length - 1] !== tag) l.tags.push(tag)
  }
  const retire = (p: RelativePath) => {
    const l = live.get(p)
    if (l === undefined) return
    live.delete(p)
    l.path = undefined
    l.after = undefined
    ended.push(l)
  }
  const start = (origin: RelativePath | undefined, before: A | undefined): MutableLineage<A, T> => ({
    origin,
    before,
    path: undefined,
    after: undefined,
    tags: []
  })

  for (const s of steps) {
    if (s.kind === "move") {
      const from = s.moveFrom!
      see(from, s.before)
      see(s.path, s.overwritten)
      wholeWrites.add(s.path)
      const l = live.get(from) ?? start(from, s.before)
      live.delete(from)
      if (live.has(s.path)) retire(s.path)
      else if (s.overwritten !== undefined) {
        const displaced = start(s.path, s.overwritten)
        touch(displaced, s.tag)
        ended.push(displaced)
      }
      l.path = s.path
      l.after = s.after
      touch(l, s.tag)
      live.set(s.path, l)
      moved.delete(from)
      moved.set(s.path, l)
      continue
    }
    const whole = s.kind === "add" || s.kind === "replace"
    see(s.path, s.kind === "add" ? s.overwritten : s.before)
    if (whole) wholeWrites.add(s.path)
    // What a path holds after a deletion or a whole write is no longer a moved-in file.
    if (whole || s.kind === "delete") moved.delete(s.path)
    let l = live.get(s.path)
    // Under `path`, a whole rewrite gives the path its own identity again.
    if (l !== undefined && whole && rule === "path") {
      retire(s.path)
      l = undefined
    }
    if (l === undefined) {
      if (rule === "path" && whole) {
        const base = first.get(s.path)
        l = start(base === undefined ? undefined : s.path, base)
      } else {
        const existed = s.kind !== "add" || s.overwritten !== undefined
        l = start(existed ? s.path : undefined, s.kind === "add" ? s.overwritten : s.before)
      }
      l.path = s.path
      live.set(s.path, l)
    }
    if (s.kind === "delete") {
      touch(l, s.tag)
      retire(s.path)
      continue
    }
    l.after = s.after
    touch(l, s.tag)
  }
  return { lineages: [...ended, ...live.values()], first, wholeWrites, moved }
}

// -------------------------------------------------------------------------------------
// projections
// -------------------------------------------------------------------------------------

/**
 * One change per file identity: `add` (did not exist before), `delete` (ends absent, named by
 * its origin), `move` (ends elsewhere), `update` (same place, content not `same`); files that
 * were created and removed, or end as they started, are omitted. Sorted by path, a deletion
 * before another change of the same path.
 *
 * @category combinators
 * @since 0.1.0
 */
export const lineageChanges = <A, T>(
  folded: Folded<A, T>,
  same: (a: A, b: A) => boolean
): Array<LineageChange<A, T>> => {
  const out: Array<LineageChange<A, T>> = []
  for (const l of folded.lineages) {
    const base = {
      ...(l.before === undefined ? {} : { before: l.before }),
      ...(l.after === undefined ? {} : { after: l.after }),
      tags: l.tags
    }
    if (l.origin === undefined && l.path === undefined) continue
    if (l.origin === undefined) out.push({ kind: "add", path: l.path!, ...base })
    else if (l.path === undefined) out.push({ kind: "delete", path: l.origin, ...base })
    else if (l.origin !== l.path) out.push({ kind: "move", path: l.path, moveFrom: l.origin, ...base })
    else if (l.before === undefined || l.after === undefined || !same(l.before, l.after)) {
      out.push({ kind: "update", path: l.path, ...base })
    }
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.kind === "delete" ? -1 : 1))
}

/**
 * Options of `pathChanges`: `moves` fuses a moved file into one `move` when its source ends
 * absent (else the source and destination are reported per path); `replace` reports a path
 * written whole as `replace` instead of `update`.
 *
 * @category models
 * @since 0.1.0
 */
export interface PathChangeOptions {
  readonly moves: boolean
  readonly replace: boolean
}

/**
 * One change per path, from the content before its first change to its last content; paths
 * whose content ends as it started (`same`) are omitted, except a fused move. Sorted by path.
 *
 * @category combinators
 * @since 0.1.0
 */
export const pathChanges = <A, T>(
  folded: Folded<A, T>,
  same: (a: A, b: A) => boolean,
  options: PathChangeOptions
): Array<PathChange<A>> => {
  const last = new Map<RelativePath, A | undefined>()
  for (const l of folded.lineages) if (l.path !== undefined) last.set(l.path, l.after)
  const out: Array<PathChange<A>> = []
  const consumed = new Set<RelativePath>()
  if (options.moves) {
    for (const [dest, l] of folded.moved) {
      const source = l.origin
      if (source === undefined || source === dest) continue
      const before = folded.first.get(source)
      const after = last.get(dest)
      if (before === undefined || after === undefined || last.get(source) !== undefined) continue
      // A path re-created and moved again can make two lineages claim one source: the first wins.
      if (consumed.has(source) || consumed.has(dest)) continue
      consumed.add(source)
      consumed.add(dest)
      const overwritten = folded.first.get(dest)
      out.push({ kind: "move", path: dest, moveFrom: source, before, after, ...(overwritten === undefined ? {} : { overwritten }) })
    }
  }
  for (const [p, before] of folded.first) {
    if (consumed.has(p)) continue
    const after = last.get(p)
    if (before === undefined && after === undefined) continue
    if (before !== undefined && after !== undefined && same(before, after)) continue
    const kind = before === undefined
      ? "add"
      : after === undefined
      ? "delete"
      : options.replace && folded.wholeWrites.has(p)
      ? "replace"
      : "update"
    out.push({ kind, path: p, ...(before === undefined ? {} : { before }), ...(after === undefined ? {} : { after }) })
  }
  return out.sort((a, b) => byCodeUnit(a.path, b.path))
}
