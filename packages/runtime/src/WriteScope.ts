/**
 * Write scopes (SPEC §6.1): the workspace-relative paths a mutating child may change. A scope
 * path covers itself and, as a directory, its subtree with a `/` boundary (`src/api` covers
 * `src/api/x.ts`, never `src/api2/x.ts`). Scope paths are normalized exactly as the engine
 * normalizes patch paths, so the guard and the writer always agree on what a path names.
 * Scopes that could never work are refused when made: globs (`*`, `?`: taken literally they
 * name nothing) and `.git` or `.forkjoin` at any depth (the engine denies writing there).
 *
 * Pure: no I/O. It does not own symlink resolution (the overlay checks where a write would
 * land) nor the task-level rules of `run_subagents` (a later module).
 *
 * @since 0.1.0
 */
import { normalizePath as normalizeRelative } from "@forkjoin/patch"
import { type RelativePath, scopeCovers } from "@forkjoin/schema"
import * as Brand from "effect/Brand"
import { dual } from "effect/Function"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * A normalized, deduplicated, sorted, non-empty list of scope paths. At runtime (and in JSON)
 * it is a plain array of relative POSIX paths; the brand says it went through `make` (or is
 * `none`, the scope of views that never write).
 *
 * @category models
 * @since 0.1.0
 */
export type WriteScope = ReadonlyArray<RelativePath> & Brand.Brand<"WriteScope">

/**
 * Why a scope (or one of its paths) was refused.
 *
 * @category models
 * @since 0.1.0
 */
export const WriteScopeProblem = Schema.Literals([
  "empty_scope",
  "empty_path",
  "absolute_path",
  "escaping_path",
  "invalid_character",
  "glob_pattern",
  "reserved_path"
])

/**
 * @category models
 * @since 0.1.0
 */
export type WriteScopeProblem = typeof WriteScopeProblem.Type

// -------------------------------------------------------------------------------------
// errors
// -------------------------------------------------------------------------------------

/**
 * A scope that cannot be used: empty, or a path that is blank, absolute, escaping, holds a
 * control character or a glob character, or lies in `.git` or `.forkjoin`. `path` is the
 * offending input as given.
 *
 * @category errors
 * @since 0.1.0
 */
export class WriteScopeError extends Schema.TaggedError<WriteScopeError>()("WriteScopeError", {
  reason: WriteScopeProblem,
  path: Schema.optional(Schema.String)
}) {
  override get message(): string {
    const p = JSON.stringify(this.path ?? "")
    switch (this.reason) {
      case "empty_scope":
        return "A mutating task needs a non-empty writeScope: list the files or directories it may change."
      case "empty_path":
        return `Write scope path ${p} names no file or directory (it is blank or the workspace root); list the directories the task may change.`
      case "absolute_path":
        return `Write scope path ${p} is absolute; give paths relative to the workspace root, like "src/api".`
      case "escaping_path":
        return `Write scope path ${p} escapes the workspace with ".."; give a path inside the workspace.`
      case "invalid_character":
        return `Write scope path ${p} contains a NUL or control character; use a plain relative path.`
      case "glob_pattern": {
        const literal = literalPrefix(this.path ?? "")
        return `Write scope path ${p} contains a glob character ('*' or '?'); write scopes are directory or file paths, not globs: ${
          literal === undefined
            ? `list the directories the task may change, like "src".`
            : `write ${JSON.stringify(literal)} to cover everything under it.`
        }`
      }
      case "reserved_path":
        return `Write scope path ${p} reaches into ${reservedIn(this.path ?? "")}, which no task may write (a repository's ` +
          `config and hooks run code; .forkjoin holds forkjoin's own state); list paths outside .git and .forkjoin folders.`
    }
  }
}

/**
 * A mutation refused because some of its paths (move destinations and deletions included) lie
 * outside the write scope. Nothing was staged.
 *
 * @category errors
 * @since 0.1.0
 */
export class WriteScopeViolation extends Schema.TaggedError<WriteScopeViolation>()("WriteScopeViolation", {
  /** The refused action, e.g. `apply_patch`. */
  operation: Schema.String,
  violatingPaths: Schema.Array(Schema.String),
  writeScope: Schema.Array(Schema.String)
}) {
  /** The stable observation code. */
  get code(): "write_scope_violation" {
    return "write_scope_violation"
  }
  override get message(): string {
    return `${this.operation} was refused: ${this.violatingPaths.map((p) => JSON.stringify(p)).join(", ")} ${
      this.violatingPaths.length === 1 ? "is" : "are"
    } outside the write scope [${
      this.writeScope.map((p) => JSON.stringify(p)).join(", ")
    }]. Nothing was staged; change only paths inside the scope.`
  }
}

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

// `*` and `?` only: brackets and braces are common literal names (`app/[id]`, Next.js routes).
const GLOB = /[*?]/
// Compared case-folded: on a case-insensitive filesystem `.GIT` is the repository folder.
const RESERVED: ReadonlyArray<string> = [".git", ".forkjoin"]

const segmentsOf = (raw: string): ReadonlyArray<string> => raw.replace(/\\/g, "/").split("/")

/** The normalized path before its first segment holding a glob character (undefined: none). */
const literalPrefix = (raw: string): string | undefined => {
  const segments = segmentsOf(raw)
  const cut = segments.findIndex((s) => GLOB.test(s))
  const prefix = normalizeRelative(segments.slice(0, cut < 0 ? segments.length : cut).join("/"))
  return Result.isSuccess(prefix) ? prefix.success : undefined
}

const reservedIn = (raw: string): string =>
  segmentsOf(raw).map((s) => s.toLowerCase()).find((s) => RESERVED.includes(s)) ?? ".git"

/**
 * Normalizes one scope path with the shared rule (`@forkjoin/patch` `normalizePath`, the one
 * the engine uses for patch paths): backslashes become `/`, `.` and empty segments drop, `..`
 * pops. Absolute paths, escaping `..`, blank paths and control characters fail with the
 * matching `WriteScopeError`, and so do glob characters (`glob_pattern`) and a `.git` or
 * `.forkjoin` segment at any depth (`reserved_path`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const normalizePath = (raw: string): Result.Result<RelativePath, WriteScopeError> =>
  Result.flatMap(
    // `empty_path` also refuses ".": a scope of the whole workspace would name nothing in particular.
    Result.mapError(normalizeRelative(raw), (reason) => new WriteScopeError({ reason, path: raw })),
    (normal) =>
      normal.split("/").some((s) => RESERVED.includes(s.toLowerCase()))
        ? Result.fail(new WriteScopeError({ reason: "reserved_path", path: raw }))
        : GLOB.test(normal)
        ? Result.fail(new WriteScopeError({ reason: "glob_pattern", path: raw }))
        : Result.succeed(normal)
  )

const brand = Brand.nominal<WriteScope>()

/**
 * The scope that covers nothing: for views that never mutate (an `analysis_only` session's
 * overlay), so no write can ever pass its guard. `make` never returns it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const none: WriteScope = brand(Object.freeze([]))

/**
 * Builds a scope from raw paths: each is normalized, duplicates drop, the result is sorted.
 * Fails on an empty list or on the first unusable path.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (raw: ReadonlyArray<string>): Result.Result<WriteScope, WriteScopeError> => {
  if (raw.length === 0) return Result.fail(new WriteScopeError({ reason: "empty_scope" }))
  const out = new Set<RelativePath>()
  for (const r of raw) {
    const n = normalizePath(r)
    if (Result.isFailure(n)) return Result.fail(n.failure)
    out.add(n.success)
  }
  return Result.succeed(brand(Object.freeze([...out].sort())))
}

/**
 * `make` that throws the `WriteScopeError` (constant scopes in tests and probes).
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeUnsafe = (raw: ReadonlyArray<string>): WriteScope => {
  const r = make(raw)
  if (Result.isFailure(r)) throw r.failure
  return r.success
}

// -------------------------------------------------------------------------------------
// combinators
// -------------------------------------------------------------------------------------


/**
 * True when the scope covers `path` (normalized first): an exact scope path or a descendant
 * across a `/` boundary. A path that cannot be normalized is never covered.
 *
 * @category combinators
 * @since 0.1.0
 */
export const covers: {
  (path: string): (self: WriteScope) => boolean
  (self: WriteScope, path: string): boolean
} = dual(2, (self: WriteScope, path: string): boolean => {
  // The shared rule only: a real file named `a*b` is covered like any other; `.git` and
  // `.forkjoin` below a scope are the engine policy's to refuse (`path_denied_by_policy`).
  const n = normalizeRelative(path)
  return Result.isSuccess(n) && scopeCovers(self, n.success)
})

/**
 * The paths the scope does not cover, as given, deduplicated, in input order. Empty means
 * every path may be written.
 *
 * @category combinators
 * @since 0.1.0
 */
export const violations: {
  (paths: ReadonlyArray<string>): (self: WriteScope) => ReadonlyArray<string>
  (self: WriteScope, paths: ReadonlyArray<string>): ReadonlyArray<string>
} = dual(2, (self: WriteScope, paths: ReadonlyArray<string>): ReadonlyArray<string> => {
  const out: Array<string> = []
  for (const p of paths) if (!covers(self, p) && !out.includes(p)) out.push(p)
  return out
})

/**
 * True when every path of `inner` is covered by `outer` (a child's guard confined to its
 * declared scope, SPEC §6.4). Compares coverage, not strings: `["src/api"]` is within `["src"]`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const isWithin: {
  (outer: WriteScope): (inner: WriteScope) => boolean
  (inner: WriteScope, outer: WriteScope): boolean
} = dual(2, (inner: WriteScope, outer: WriteScope): boolean => inner.every((p) => scopeCovers(outer, p)))
