/**
 * The one home of workspace-relative path rules. Lexical normalisation (separators, `.`,
 * `..`, control characters) is the same everywhere — patch targets, write scopes, history
 * view requests, provider events — so a guard and the writer always agree on what a path
 * names. The rule for `..`: it pops the previous segment; a `..` with nothing left to pop
 * escapes the workspace and is refused. Also the containment of absolute paths under a root.
 * Resolving symlinks is the engine's job.
 *
 * @since 0.1.0
 */
import type { RelativePath } from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as path from "node:path"
import * as Result from "effect/Result"

/**
 * Why a raw path cannot name a file in the workspace.
 *
 * @category models
 * @since 0.1.0
 */
export type PathProblem = "invalid_character" | "absolute_path" | "escaping_path" | "empty_path"

// Control characters (C0, DEL, C1) never belong in a path a model wrote and break terminals and logs.
const CONTROL = /[\u0000-\u001F\u007F-\u009F]/

/**
 * Normalizes a workspace-relative path to POSIX form (`a/b.txt`): backslashes become `/`,
 * `.` and empty segments drop, `..` pops. Fails with the problem for control characters,
 * absolute paths (`/x`, `C:\x`, `\\host\share`), a `..` that escapes, or a path naming nothing.
 *
 * @category constructors
 * @since 0.1.0
 */
export const normalizePath = (raw: string): Result.Result<RelativePath, PathProblem> => {
  if (CONTROL.test(raw)) return Result.fail("invalid_character")
  const slashed = raw.replace(/\\/g, "/")
  if (slashed.startsWith("/") || /^[A-Za-z]:/.test(slashed)) return Result.fail("absolute_path")
  const out: Array<string> = []
  for (const segment of slashed.split("/")) {
    if (segment === "" || segment === ".") continue
    if (segment === "..") {
      if (out.length === 0) return Result.fail("escaping_path")
      out.pop()
      continue
    }
    out.push(segment)
  }
  if (out.length === 0) return Result.fail("empty_path")
  return Result.succeed(out.join("/") as RelativePath)
}

/**
 * `normalizePath` with the engine's error (stage 3): control characters and blank paths are
 * `path_invalid`, absolute or escaping paths are `path_outside_roots`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const normalizeRelativePath = (raw: string): Result.Result<RelativePath, EngineError> => {
  const r = normalizePath(raw)
  return Result.isSuccess(r) ? Result.succeed(r.success) : Result.fail(pathError(raw, r.failure))
}

const pathError = (raw: string, problem: PathProblem): EngineError => {
  switch (problem) {
    case "invalid_character":
      return new EngineError({
        code: "path_invalid",
        stage: Stage.resolve,
        paths: [JSON.stringify(raw).slice(1, -1)],
        message: `Path ${JSON.stringify(raw)} contains a NUL or control character; use a plain relative path.`
      })
    case "absolute_path":
      return new EngineError({
        code: "path_outside_roots",
        stage: Stage.resolve,
        paths: [raw],
        message: `Path '${raw}' is absolute; use paths relative to the workspace root.`
      })
    case "escaping_path":
      return new EngineError({
        code: "path_outside_roots",
        stage: Stage.resolve,
        paths: [raw],
        message: `Path '${raw}' escapes the workspace with '..'; use paths inside the workspace.`
      })
    case "empty_path":
      return new EngineError({
        code: "path_invalid",
        stage: Stage.resolve,
        paths: [raw],
        message: `Path '${raw}' names no file; give a file path relative to the workspace root.`
      })
  }
}

/**
 * True when the absolute path `candidate` is `root` itself or below it (a `/` boundary:
 * `/ws2` is not inside `/ws`). Both must already be resolved the same way (real paths).
 *
 * @category guards
 * @since 0.1.0
 */
export const isInside = (root: string, candidate: string): boolean =>
  candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep)

/**
 * The workspace-relative POSIX form of an absolute path below `root` (`""` for the root
 * itself), or `undefined` when it lies outside.
 *
 * @category constructors
 * @since 0.1.0
 */
export const relativeUnder = (root: string, absolute: string): string | undefined =>
  isInside(root, absolute) ? path.relative(root, absolute).split(path.sep).join("/") : undefined

/**
 * The stable order of relative paths and names: by UTF-16 code unit (JavaScript's `<`), the
 * same on every platform and locale.
 *
 * @category combinators
 * @since 0.1.0
 */
export const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
