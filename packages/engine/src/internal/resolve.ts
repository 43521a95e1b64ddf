/**
 * Engine stage 3 (resolve): turns normalized relative target paths into absolute locations
 * under the workspace's real path, refusing denied paths (policy globs) and symlinks that
 * lead outside the allowed roots, and reads what is there now. One walk serves the write
 * path and `read` (first problem fails) and `inspect` (each path's problem is its own).
 * Owns no writing (see `commit.ts`) and no patch semantics (that is `@forkjoin/patch`).
 */
import type { FileState } from "@forkjoin/patch"
import { isInside, relativeUnder } from "@forkjoin/patch/RelativePath"
import { describeEntry, readCheckedFile } from "@forkjoin/patch/SafeRead"
import { errnoOf, remedyOf } from "@forkjoin/patch/SystemError"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import { type Pausable, runNow } from "./turns.ts"

/** One target as found on disk before planning. */
export interface ResolvedTarget {
  /** Normalized workspace-relative POSIX path (the user-facing value). */
  readonly path: string
  /** Where the file lives after following in-workspace symlinks of its parent directories. */
  readonly absolute: string
  readonly state: FileState
  /** Permission bits of an existing regular file, kept when it is rewritten. */
  readonly mode: number | undefined
}

/** What resolution needs to know about the workspace. */
export interface ResolveContext {
  /** Real path of the workspace root. */
  readonly root: string
  /** Real paths of extra roots that in-workspace symlinks may lead into. */
  readonly allowedRoots: ReadonlyArray<string>
  /** Compiled denied globs (relative POSIX paths), e.g. `.git/**`. */
  readonly denied: ReadonlyArray<{ readonly glob: string; readonly re: RegExp }>
  /** Fold case when comparing paths (case-insensitive filesystems). */
  readonly caseInsensitive: boolean
}

/** The policy's glob matcher (one definition, in `@forkjoin/patch/PathPolicy`). */
export { compileGlob } from "@forkjoin/patch/PathPolicy"

const fail = (
  code: "path_invalid" | "path_outside_roots" | "path_denied_by_policy" | "stale_file",
  rel: string,
  message: string,
  cause?: unknown
) => new EngineError({ code, stage: Stage.resolve, paths: [rel], message, ...(cause === undefined ? {} : { cause }) })

/**
 * Resolves one normalized relative path under `root` (already a real path) and reads its state.
 * Throws an `EngineError` (stage 3) for denied, escaping or unreadable paths.
 */
export const resolveTarget = (ctx: ResolveContext, rel: string): ResolvedTarget => {
  const root = ctx.root
  const segments = rel.split("/")
  // `normalizeRelativePath` already guarantees this; re-checked because escaping is fatal.
  if (segments.some((s) => s === "" || s === "." || s === "..") || path.isAbsolute(rel)) {
    throw fail("path_invalid", rel, `Path '${rel}' is not a normalized relative path; give it like 'src/a.ts'.`)
  }
  denyByPolicy(ctx, rel, rel)
  const target = walk(ctx, rel, segments)
  // The lexical check above misses an in-workspace symlink such as `g -> .git`; check where
  // the write would really land too.
  const landed = relativeUnder(root, target.absolute)
  if (landed !== undefined) denyByPolicy(ctx, rel, landed)
  return target
}

const denyByPolicy = (ctx: ResolveContext, rel: string, landed: string): void => {
  for (const { glob, re } of ctx.denied) {
    if (re.test(landed)) {
      throw fail(
        "path_denied_by_policy",
        rel,
        `Path '${rel}' matches the denied pattern '${glob}' of the workspace policy, which forkjoin neither reads nor changes; use paths outside it.`
      )
    }
  }
}

const walk = (ctx: ResolveContext, rel: string, segments: ReadonlyArray<string>): ResolvedTarget => {
  const root = ctx.root
  // Walk the path one component at a time with lstat, so a symlink anywhere on it is seen
  // before anything follows it.
  let current = root
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!
    const isLast = i === segments.length - 1
    const next = path.join(current, segment)
    let stat: fs.Stats
    try {
      stat = fs.lstatSync(next)
    } catch (error) {
      const errno = errnoOf(error)
      if (errno === "ENOENT") {
        // Everything below a missing component is missing too (created on write).
        return { path: rel, absolute: path.join(next, ...segments.slice(i + 1)), state: { _tag: "Missing" }, mode: undefined }
      }
      if (errno === "ENOTDIR") {
        throw fail("path_invalid", rel, `Path '${rel}' goes through a component that is not a directory; fix the path.`, error)
      }
      throw fail("path_invalid", rel, `Cannot inspect '${rel}' (${errno ?? String(error)}); ${remedyOf(error) ?? "check the path and its permissions"}.`, error)
    }

    if (stat.isSymbolicLink()) {
      let real: string
      try {
        real = fs.realpathSync(next)
      } catch (error) {
        // A dangling link: we cannot prove where a write would land.
        throw fail(
          "path_outside_roots",
          rel,
          `Path '${rel}' goes through a symbolic link that does not resolve, so where it leads cannot be checked; use the real path of the file.`,
          error
        )
      }
      if (!isInside(root, real) && !ctx.allowedRoots.some((r) => isInside(r, real))) {
        throw fail(
          "path_outside_roots",
          rel,
          `Path '${rel}' goes through a symbolic link that leads outside the workspace and its allowed roots; only files inside them can be used.`
        )
      }
      if (isLast) {
        // Renaming a temp file over a link would silently replace the link with a regular file;
        // the planner reports `Other` as an unsupported file type.
        return {
          path: rel,
          absolute: next,
          state: { _tag: "Other", description: "a symbolic link" },
          mode: undefined
        }
      }
      current = real
      continue
    }

    if (isLast) {
      if (stat.isFile()) {
        // Through a link such as `g -> .git` the file lies in a denied folder: refuse it by the
        // policy before it is opened.
        const landed = relativeUnder(root, next)
        if (landed !== undefined) denyByPolicy(ctx, rel, landed)
        const bytes = readChecked(ctx, rel, next, stat)
        return { path: rel, absolute: next, state: { _tag: "File", bytes }, mode: stat.mode & 0o7777 }
      }
      if (stat.isDirectory()) {
        return { path: rel, absolute: next, state: { _tag: "Directory" }, mode: undefined }
      }
      return { path: rel, absolute: next, state: { _tag: "Other", description: describeEntry(stat) }, mode: undefined }
    }
    if (!stat.isDirectory()) {
      throw fail(
        "path_invalid",
        rel,
        `Path '${rel}' goes through '${segments.slice(0, i + 1).join("/")}', which is not a directory; fix the path.`
      )
    }
    current = next
  }
  // Unreachable: the loop returns on its last segment.
  throw fail("path_invalid", rel, `Path '${rel}' names no file.`)
}

/**
 * Reads the file the walk checked at `absolute`, through the descriptor checks of
 * `readCheckedFile`: another process may have swapped it (or a folder on its path) for a link
 * since the walk looked, so where the opened file really is must be inside the roots and
 * outside the denied paths too.
 */
const readChecked = (ctx: ResolveContext, rel: string, absolute: string, checked: fs.Stats): Uint8Array => {
  const read = readCheckedFile(absolute, checked, (landed) => {
    const under = relativeUnder(ctx.root, landed)
    if (under !== undefined) return !ctx.denied.some(({ re }) => re.test(under))
    return ctx.allowedRoots.some((r) => isInside(r, landed))
  })
  if (Result.isSuccess(read)) return read.success
  const refusal = read.failure
  switch (refusal._tag) {
    case "Replaced":
      throw fail(
        "stale_file",
        rel,
        `'${rel}' changed while it was being read (${refusal.detail}): another process is replacing it; read it again once it settles.`
      )
    case "Refused":
      throw fail(
        "path_outside_roots",
        rel,
        `'${rel}' led outside the workspace's allowed files when it was opened (a folder on its path was replaced by a link); only files inside the workspace can be read.`
      )
    case "Failed":
      throw fail(
        "path_invalid",
        rel,
        `Cannot read '${rel}' (${errnoOf(refusal.error) ?? String(refusal.error)}); ${remedyOf(refusal.error) ?? "check the file and its permissions"}.`,
        refusal.error
      )
  }
}

/**
 * Remembers where each resolved path lands and reports the second of two paths that reach the
 * same file through in-workspace symlinks or letter case (a plan would treat them as
 * independent files).
 */
const sameFileGuard = (ctx: ResolveContext): (target: ResolvedTarget) => EngineError | undefined => {
  const seen = new Map<string, string>()
  return (target) => {
    // On a case-insensitive filesystem `A.txt` and `a.txt` are one file: one plan entry only.
    const key = ctx.caseInsensitive ? target.absolute.toLowerCase() : target.absolute
    const other = seen.get(key)
    if (other !== undefined && other !== target.path) {
      return new EngineError({
        code: "path_invalid",
        stage: Stage.resolve,
        paths: [other, target.path],
        message: `Paths '${other}' and '${target.path}' name the same file (through a symbolic link or letter case); use one path per file.`
      })
    }
    seen.set(key, target.path)
    return undefined
  }
}

/**
 * Resolves every target in order and throws the first problem: a path's own (stage 3) or
 * two paths naming the same file. Pauses after each path (`runWithTurns`).
 */
export function* resolvingTargets(ctx: ResolveContext, rels: ReadonlyArray<string>): Pausable<ReadonlyArray<ResolvedTarget>> {
  const guard = sameFileGuard(ctx)
  const out: Array<ResolvedTarget> = []
  for (const rel of rels) {
    const target = resolveTarget(ctx, rel)
    const clash = guard(target)
    if (clash !== undefined) throw clash
    out.push(target)
    yield
  }
  return out
}

/** `resolvingTargets` at once, without pausing. */
export const resolveTargets = (ctx: ResolveContext, rels: ReadonlyArray<string>): ReadonlyArray<ResolvedTarget> =>
  runNow(resolvingTargets(ctx, rels))

/**
 * Resolves every target, keeping each path's own problem as that path's failure; fails as a
 * whole only when two paths name the same file. Pauses after each path (`runWithTurns`).
 */
export function* resolvingEach(
  ctx: ResolveContext,
  rels: ReadonlyArray<string>
): Pausable<Result.Result<ReadonlyArray<readonly [string, Result.Result<ResolvedTarget, EngineError>]>, EngineError>> {
  const guard = sameFileGuard(ctx)
  const out: Array<readonly [string, Result.Result<ResolvedTarget, EngineError>]> = []
  for (const rel of rels) {
    const resolved = resolveTargetResult(ctx, rel)
    if (Result.isSuccess(resolved)) {
      const clash = guard(resolved.success)
      if (clash !== undefined) return Result.fail(clash)
    }
    out.push([rel, resolved])
    yield
  }
  return Result.succeed(out)
}

/** `resolveTarget` as a value: the path's stage-3 problem is the failure. */
const resolveTargetResult = (ctx: ResolveContext, rel: string): Result.Result<ResolvedTarget, EngineError> => {
  try {
    return Result.succeed(resolveTarget(ctx, rel))
  } catch (error) {
    if (error instanceof EngineError) return Result.fail(error)
    throw error
  }
}
