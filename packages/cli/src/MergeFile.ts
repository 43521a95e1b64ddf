/**
 * `forkjoin merge-file OURS BASE THEIRS`: the three-way merge of three files on disk, as `git
 * merge-file` does it, for files outside any workspace (so not through the engine). Owns what
 * `merge-file` and `merge-driver` share: reading an input (`readInput`), merging three sides
 * (`mergeSides`), choosing and replacing the file a result goes to (`resolveTarget`,
 * `writeAtomically`) and reporting a failure (`failureOutput`). The flags are in
 * `MergeFileCommand.ts`, the driver in `MergeDriver.ts`; the merge itself is `@forkjoin/merge`'s.
 *
 * @since 0.1.0
 */
import { mergeFile, type SyntaxContext, syntaxContext } from "@forkjoin/merge/FileMerge"
import { Grammars } from "@forkjoin/merge/Grammars"
import { type Language, languageOfPath } from "@forkjoin/merge/Syntax"
import { type MarkerLabels, mergeText } from "@forkjoin/merge/TextMerge"
import { sameBytes } from "@forkjoin/patch/Bytes"
import { describeSystemError, errnoOf, remedyOf } from "@forkjoin/patch/SystemError"
import type { ConflictReason } from "@forkjoin/schema/Conflict"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Colour from "./internal/colour.ts"
import { HeldReason, MergeFileErrorCode, MergeFileFailure, MergeFileReport } from "./MergeFileReport.ts"
import type { MergeMethod } from "@forkjoin/schema/PatchHistoryRecord"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * A merge that wrote nothing: a stable `code`, the `paths` involved (as given) and a message
 * that says what to do. Input and output problems exit 2, the others 255 (`exitCodeOf`).
 *
 * @category errors
 * @since 0.1.0
 */
export class MergeFileError extends Schema.TaggedError<MergeFileError>()("MergeFileError", {
  code: MergeFileErrorCode,
  paths: Schema.Array(Schema.String),
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/**
 * The three sides of a merge, read from their files.
 *
 * @category models
 * @since 0.1.0
 */
export interface Sides {
  readonly base: Uint8Array
  readonly ours: Uint8Array
  readonly theirs: Uint8Array
}

/**
 * What merging three sides gives:
 * - `Clean`: `bytes` is the result, made by lines or by syntax tree (`method`, `language`);
 * - `Conflicted`: `bytes` is the file with `conflicts` regions between diff3 markers;
 * - `Held`: the line merge is clean but its structural checks refused it (`reason`) and merging
 *   by syntax did not settle it; `bytes` is the line merge, without markers;
 * - `Unmergeable`: nothing to write: both sides changed the file and it cannot be merged by
 *   lines (`reason`, `binary`: a version has a NUL byte or is not UTF-8).
 *
 * @category models
 * @since 0.1.0
 */
export type Merged =
  | { readonly _tag: "Clean"; readonly bytes: Uint8Array; readonly method: MergeMethod; readonly language?: Language }
  | { readonly _tag: "Conflicted"; readonly bytes: Uint8Array; readonly conflicts: number }
  | { readonly _tag: "Held"; readonly bytes: Uint8Array; readonly reason: HeldReason }
  | { readonly _tag: "Unmergeable"; readonly reason: ConflictReason }

/**
 * One `merge-file` invocation, after flag parsing. `output` is where the result goes (OURS
 * when not given); `toStdout` prints it instead; `labels` are the `-L` values in order;
 * `language` overrides the one OURS's extension names.
 *
 * @category models
 * @since 0.1.0
 */
export interface MergeFileRequest {
  readonly ours: string
  readonly base: string
  readonly theirs: string
  readonly output?: string | undefined
  readonly toStdout: boolean
  readonly labels: ReadonlyArray<string>
  readonly language?: Language | undefined
}

// -------------------------------------------------------------------------------------
// the merge (pure)
// -------------------------------------------------------------------------------------

const encoder = new TextEncoder()

const isHeldReason = Schema.is(HeldReason)

/**
 * Merges three sides by `@forkjoin/merge`'s file merge. A side equal to the base gives the other
 * side byte for byte (binary or not). With `syntax` (a parser of the file's language), a line
 * conflict is merged by syntax tree where it can be, and a clean line merge must pass the
 * structural checks. Pure.
 *
 * @category combinators
 * @since 0.1.0
 */
export const mergeSides = (sides: Sides, labels: MarkerLabels, syntax?: SyntaxContext): Merged => {
  const outcome = mergeFile(sides, labels, { syntax })
  switch (outcome._tag) {
    case "Unchanged":
    case "Converged":
      return { _tag: "Clean", bytes: sides.ours, method: "line" }
    case "TakeTheirs":
      return { _tag: "Clean", bytes: outcome.bytes ?? sides.theirs, method: "line" }
    case "AutoMerged":
      return { _tag: "Clean", bytes: outcome.bytes, method: outcome.method, ...(outcome.language === undefined ? {} : { language: outcome.language }) }
    case "Conflict": {
      if (outcome.hunks.length > 0) return { _tag: "Conflicted", bytes: encoder.encode(outcome.text), conflicts: outcome.hunks.length }
      // Held by a check, so the line merge itself was clean: it is what gets written.
      const line = isHeldReason(outcome.reason) ? mergeText(sides.base, sides.ours, sides.theirs, labels) : undefined
      return line?._tag === "Merged" && isHeldReason(outcome.reason)
        ? { _tag: "Held", bytes: line.bytes, reason: outcome.reason }
        : { _tag: "Unmergeable", reason: outcome.reason }
    }
  }
}

/**
 * The parser to merge `sides` as `language` with, loaded through `Grammars` (when provided)
 * only when the merge needs one: a language is known and both sides changed the file,
 * differently. A grammar that cannot be loaded gives a warning naming it; the merge is then by
 * lines.
 *
 * @category constructors
 * @since 0.1.0
 */
export const syntaxFor = (
  sides: Sides,
  language: Language | undefined
): Effect.Effect<{ readonly syntax?: SyntaxContext | undefined; readonly warnings: ReadonlyArray<string> }> =>
  Effect.gen(function*() {
    const { base, ours, theirs } = sides
    if (language === undefined || sameBytes(ours, base) || sameBytes(theirs, base) || sameBytes(ours, theirs)) return { warnings: [] }
    const grammars = yield* Effect.serviceOption(Grammars)
    if (Option.isNone(grammars)) return { warnings: [] }
    const parser = yield* grammars.value.parser(language).pipe(Effect.result)
    if (Result.isFailure(parser)) return { warnings: [`${parser.failure.message}; this file was merged by lines only`] }
    const clock = yield* Clock.Clock
    // The budget (the join's) starts when the merge does, just after this.
    return { syntax: syntaxContext(parser.success, () => clock.currentTimeMillisUnsafe()), warnings: [] }
  })

/**
 * The marker labels: the `-L` values in order (ours, base, theirs), each side without one
 * named by its file as given.
 *
 * @category constructors
 * @since 0.1.0
 */
export const labelsOf = (given: ReadonlyArray<string>, names: MarkerLabels): MarkerLabels => ({
  ours: given[0] ?? names.ours,
  base: given[1] ?? names.base,
  theirs: given[2] ?? names.theirs
})

/**
 * The exit code `git merge-file` gives for a result with `conflicts` conflicts: their number,
 * at most 127 (0 is clean).
 *
 * @category constructors
 * @since 0.1.0
 */
export const conflictExitCode = (conflicts: number): number => Math.min(conflicts, 127)

// -------------------------------------------------------------------------------------
// reading and writing files
// -------------------------------------------------------------------------------------

/**
 * A path for a message: as given, or JSON-quoted when it holds control characters, so a file
 * name cannot rewrite the terminal or forge a line.
 *
 * @category constructors
 * @since 0.1.0
 */
export const shownPath = (file: string): string => /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(file) ? JSON.stringify(file) : file

const remedy = (cause: unknown, otherwise: string): string => remedyOf(cause) ?? otherwise

/**
 * Reads the input `file` (the side named `role`, e.g. `BASE`). A missing file, a directory,
 * or anything that is not a regular file or cannot be read is refused naming it. It is opened
 * without blocking, so a named pipe is refused instead of waited on.
 *
 * @category constructors
 * @since 0.1.0
 */
export const readInput = (file: string, role: string): Effect.Effect<Uint8Array, MergeFileError> =>
  Effect.suspend(() => {
    const shown = `${role} ${shownPath(file)}`
    const fail = (code: MergeFileErrorCode, message: string, cause?: unknown) =>
      Effect.fail(new MergeFileError({ code, paths: [file], message, cause }))
    let fd: number
    try {
      fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK)
    } catch (cause) {
      return errnoOf(cause) === "ENOENT"
        ? fail("input_missing", `${shown} does not exist: check the path (a symbolic link must point to an existing file)`, cause)
        : fail("input_unreadable", `${shown} cannot be read (${describeSystemError(cause)}): ${remedy(cause, "check the path")}`, cause)
    }
    try {
      const stat = fs.fstatSync(fd)
      if (stat.isDirectory()) return fail("input_is_directory", `${shown} is a directory: give the path of a file`)
      if (!stat.isFile()) return fail("input_unreadable", `${shown} is not a regular file (a named pipe, socket or device): give the path of a file`)
      return Effect.succeed(new Uint8Array(fs.readFileSync(fd)))
    } catch (cause) {
      return fail("input_unreadable", `${shown} cannot be read (${describeSystemError(cause)}): ${remedy(cause, "check the file")}`, cause)
    } finally {
      fs.closeSync(fd)
    }
  })

/**
 * The file a result replaces when it is written to `file` (the side named `role`): `file`
 * itself, or the file a symbolic link at `file` points to (the link stays, as `git merge-file`
 * writes through it). A file not there yet is written new in its existing folder. A
 * directory, a link to nothing, a folder that does not exist or anything but a regular file is
 * refused naming `file`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolveTarget = (file: string, role: string): Effect.Effect<string, MergeFileError> =>
  Effect.suspend(() => {
    const shown = `${role} ${shownPath(file)}`
    const refuse = (message: string, cause?: unknown) =>
      Effect.fail(new MergeFileError({ code: "output_invalid", paths: [file], message, cause }))
    let stat: fs.Stats
    try {
      stat = fs.lstatSync(file)
    } catch (cause) {
      if (errnoOf(cause) !== "ENOENT") return refuse(`${shown} cannot be checked (${describeSystemError(cause)}): ${remedy(cause, "check the path")}`, cause)
      const folder = path.dirname(path.resolve(file))
      const isFolder = (() => {
        try {
          return fs.statSync(folder).isDirectory()
        } catch {
          return false
        }
      })()
      return isFolder ? Effect.succeed(path.resolve(file)) : refuse(`${shown}: its folder ${shownPath(folder)} does not exist; create it first`)
    }
    let target = path.resolve(file)
    if (stat.isSymbolicLink()) {
      try {
        target = fs.realpathSync(file)
        stat = fs.statSync(target)
      } catch (cause) {
        return refuse(`${shown} is a symbolic link that does not lead to a file (${describeSystemError(cause)}): fix or remove the link`, cause)
      }
    }
    if (stat.isDirectory()) return refuse(`${shown} is a directory: give the path of a file`)
    if (!stat.isFile()) return refuse(`${shown} is not a regular file (a named pipe, socket or device): give the path of a file, or print the result with -p`)
    return Effect.succeed(target)
  })

// Best-effort cleanup after a failed write; the write's own error is the one reported.
const removeQuietly = (file: string): void => {
  try {
    fs.rmSync(file, { force: true })
  } catch {
    // the folder itself is unusable: nothing was left there
  }
}

/**
 * Replaces `target` (from `resolveTarget`) with `bytes` in one step: a new temp file in the
 * same folder, written and synced, given the old file's mode (and owner, where allowed), then
 * renamed over it. A failure at any step removes the temp file and leaves `target` as it was.
 * `shown` names the file in the error (the path as the user gave it).
 *
 * @category constructors
 * @since 0.1.0
 */
export const writeAtomically = (target: string, bytes: Uint8Array, shown: string): Effect.Effect<void, MergeFileError> =>
  Effect.suspend(() => {
    const temp = path.join(path.dirname(target), `.${path.basename(target)}.forkjoin-${process.pid}-${randomBytes(4).toString("hex")}.tmp`)
    let created = false
    try {
      const previous = (() => {
        try {
          return fs.statSync(target)
        } catch {
          return undefined
        }
      })()
      // "wx": a fresh entry, never an existing file or a link planted at the temp name.
      const fd = fs.openSync(temp, "wx", previous === undefined ? 0o666 : 0o600)
      created = true
      try {
        fs.writeFileSync(fd, bytes)
        if (previous !== undefined) {
          fs.fchmodSync(fd, previous.mode & 0o7777)
          if (previous.uid !== process.getuid?.() || previous.gid !== process.getgid?.()) {
            try {
              fs.fchownSync(fd, previous.uid, previous.gid)
            } catch {
              // Only the owner's own id (or root) may give a file away: the result is then the writer's.
            }
          }
        }
        // On disk before the rename publishes it: a crash never leaves an empty result.
        fs.fsyncSync(fd)
      } finally {
        fs.closeSync(fd)
      }
      fs.renameSync(temp, target)
      return Effect.void
    } catch (cause) {
      if (created) removeQuietly(temp)
      return Effect.fail(
        new MergeFileError({
          code: "write_failed",
          paths: [shown],
          message: `${shownPath(shown)} could not be written (${describeSystemError(cause)}), so it is unchanged: ${
            remedy(cause, "check the folder's permissions and free space")
          }`,
          cause
        })
      )
    }
  })

// -------------------------------------------------------------------------------------
// the command's program
// -------------------------------------------------------------------------------------

/**
 * What a `merge-file` run did: the report (its `path` is where the result went, `-` for
 * stdout), warnings (a grammar that could not be loaded) and, with `-p`, the bytes to print.
 *
 * @category models
 * @since 0.1.0
 */
export interface MergeFileResult {
  readonly report: MergeFileReport
  readonly warnings: ReadonlyArray<string>
  readonly printed?: Uint8Array
}

/**
 * Runs one `merge-file`: reads OURS, BASE and THEIRS, checks where the result goes, merges,
 * then writes the result (markers included) into OURS, the `-o` file or, with `-p`, returns it
 * for stdout. Nothing is written when any of that fails, nor when the result equals OURS and
 * OURS is where it goes.
 *
 * @category constructors
 * @since 0.1.0
 */
export const mergeFiles = (request: MergeFileRequest): Effect.Effect<MergeFileResult, MergeFileError> =>
  Effect.gen(function*() {
    const ours = yield* readInput(request.ours, "OURS")
    const base = yield* readInput(request.base, "BASE")
    const theirs = yield* readInput(request.theirs, "THEIRS")
    const destination = request.output ?? request.ours
    const target = request.toStdout ? undefined : yield* resolveTarget(destination, request.output === undefined ? "OURS" : "-o")
    const labels = labelsOf(request.labels, { ours: request.ours, base: request.base, theirs: request.theirs })
    const sides = { base, ours, theirs }
    const { syntax, warnings } = yield* syntaxFor(sides, request.language ?? languageOfPath(request.ours))
    const merged = mergeSides(sides, labels, syntax)
    // With a file on every side, a conflict that cannot be written is a binary one.
    if (merged._tag === "Unmergeable") {
      return yield* new MergeFileError({
        code: "binary_file",
        paths: [request.ours, request.base, request.theirs],
        message: `OURS and THEIRS both changed BASE and a version is binary (a NUL byte, or not UTF-8), so it cannot be merged by lines; ` +
          `nothing was written: keep one side (copy THEIRS over OURS, or leave OURS) or merge it with a tool for that format`
      })
    }
    const where = target === undefined ? "-" : destination
    const report = MergeFileReport.make(
      merged._tag === "Clean"
        ? { ok: true, path: where, clean: true, conflicts: 0, method: merged.method, ...(merged.language === undefined ? {} : { language: merged.language }) }
        : merged._tag === "Conflicted"
        ? { ok: true, path: where, clean: false, conflicts: merged.conflicts, method: "line" }
        : { ok: true, path: where, clean: false, conflicts: 1, method: "line", reason: merged.reason }
    )
    if (target === undefined) return { report, warnings, printed: merged.bytes }
    const unchanged = request.output === undefined && Buffer.from(merged.bytes).equals(ours)
    if (!unchanged) yield* writeAtomically(target, merged.bytes, destination)
    return { report, warnings }
  })

// -------------------------------------------------------------------------------------
// rendering
// -------------------------------------------------------------------------------------

/**
 * The `--json` line of a merge that wrote its result.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = (report: MergeFileReport): string => JSON.stringify(report) + "\n"

/**
 * The stderr line after a merge with conflicts (nothing is said after a clean one, as with
 * `git merge-file`): how many, where, and what to do.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderConflicts = (report: MergeFileReport): string => {
  const where = report.path === "-" ? "in the output" : `in ${shownPath(report.path)}`
  if (report.reason !== undefined) {
    const what = report.reason === "duplicate_member" ? "names a key or member twice" : "no longer parses"
    return `1 conflict ${where}: the changes merged by lines without overlapping, but the result ${what} (neither side did) ` +
      `and merging by syntax did not settle it; the line merge was written without markers: fix it by hand.\n`
  }
  return report.conflicts === 0
    ? ""
    : `${report.conflicts} conflict${report.conflicts === 1 ? "" : "s"} ${report.path === "-" ? "marked in the output" : `written to ${shownPath(report.path)}`} ` +
      `between <<<<<<< and >>>>>>> markers: edit each region to what it should say and remove the markers.\n`
}

/**
 * The warnings of a merge for stderr, one `warning: ...` line each.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderWarnings = (warnings: ReadonlyArray<string>): string => warnings.map((w) => `warning: ${w}\n`).join("")

/**
 * The exit code of a merge that wrote nothing: 2 for an input or output that cannot be used
 * (nothing was tried), 255 for a merge or write that failed.
 *
 * @category constructors
 * @since 0.1.0
 */
export const exitCodeOf = (error: MergeFileError): number =>
  error.code === "binary_file" || error.code === "write_failed" ? 255 : 2

/**
 * What the process prints for a merge that wrote nothing: with `json` the one
 * `{"ok":false,"error":{...}}` line on stdout, else `error[code]: message` and the paths on stderr.
 *
 * @category combinators
 * @since 0.1.0
 */
export const failureOutput = (
  error: MergeFileError,
  json: boolean,
  palette: Colour.Palette = Colour.plain
): { readonly stdout: string; readonly stderr: string; readonly exitCode: number } => {
  const exitCode = exitCodeOf(error)
  if (json) {
    const line = MergeFileFailure.make({ ok: false, error: { code: error.code, paths: error.paths, message: error.message } })
    return { stdout: JSON.stringify(line) + "\n", stderr: "", exitCode }
  }
  const lines = [`${palette.red(`error[${error.code}]`)}: ${error.message}`, ...error.paths.map((p) => `  path: ${shownPath(p)}`)]
  return { stdout: "", stderr: lines.join("\n") + "\n", exitCode }
}
