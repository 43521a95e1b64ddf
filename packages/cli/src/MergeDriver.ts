/**
 * `forkjoin merge-driver %O %A %B %P`: forkjoin's merge as a git merge driver. git hands it the
 * base (%O), the current version (%A, which receives the result) and the other version (%B) as
 * temp files, and the path's name (%P); it reads %A back afterwards. The result replaces %A in
 * one step (`MergeFile.writeAtomically`), so %A is never left half-written; on any failure it
 * keeps the current version. The flags are in `MergeDriverCommand.ts`.
 *
 * @since 0.1.0
 */
import { languageOfPath } from "@forkjoin/merge/Syntax"
import { defaultLabels } from "@forkjoin/merge/TextMerge"
import * as Effect from "effect/Effect"
import { type MergeFileError, mergeSides, readInput, resolveTarget, shownPath, syntaxFor, writeAtomically } from "./MergeFile.ts"
import type { HeldReason } from "./MergeFileReport.ts"

/**
 * One driver invocation: the files git passes for %O, %A and %B, and %P when given.
 *
 * @category models
 * @since 0.1.0
 */
export interface MergeDriverRequest {
  readonly base: string
  readonly current: string
  readonly other: string
  readonly pathName?: string | undefined
}

/**
 * What the driver did: `Clean` (the result is in %A), `Conflicted` (%A holds the result with
 * `conflicts` regions between markers), `Held` (%A holds a line merge its structural checks
 * refused, `reason`) or `KeptCurrent` (both sides changed a binary file: %A is the current
 * version, unchanged). `warnings` name grammars that could not be loaded.
 *
 * @category models
 * @since 0.1.0
 */
export type DriverOutcome = (
  | { readonly _tag: "Clean" }
  | { readonly _tag: "Conflicted"; readonly conflicts: number }
  | { readonly _tag: "Held"; readonly reason: HeldReason }
  | { readonly _tag: "KeptCurrent" }
) & { readonly warnings: ReadonlyArray<string> }

/**
 * Merges %B into %A relative to %O and writes the result into %A (markers included when the
 * sides conflict), merging by syntax tree where %P's extension names a language with a grammar
 * (loaded only when both sides changed the file). Inputs that cannot be read, and a failed
 * write, leave %A as it was.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runDriver = (request: MergeDriverRequest): Effect.Effect<DriverOutcome, MergeFileError> =>
  Effect.gen(function*() {
    const base = yield* readInput(request.base, "%O (base)")
    const ours = yield* readInput(request.current, "%A (current)")
    const theirs = yield* readInput(request.other, "%B (other)")
    const target = yield* resolveTarget(request.current, "%A (current)")
    const sides = { base, ours, theirs }
    const { syntax, warnings } = yield* syntaxFor(sides, languageOfPath(request.pathName ?? request.current))
    const merged = mergeSides(sides, defaultLabels, syntax)
    if (merged._tag === "Unmergeable") return { _tag: "KeptCurrent", warnings }
    if (!Buffer.from(merged.bytes).equals(ours)) yield* writeAtomically(target, merged.bytes, request.current)
    switch (merged._tag) {
      case "Clean":
        return { _tag: "Clean", warnings }
      case "Conflicted":
        return { _tag: "Conflicted", conflicts: merged.conflicts, warnings }
      case "Held":
        return { _tag: "Held", reason: merged.reason, warnings }
    }
  })

/**
 * The exit code git reads: 0 clean, 1 a conflict (markers written, a line merge held by its
 * checks, or a binary file kept as the current version). git treats any other non-zero code as a conflict too.
 *
 * @category constructors
 * @since 0.1.0
 */
export const driverExitCode = (outcome: DriverOutcome): number => outcome._tag === "Clean" ? 0 : 1

/**
 * The stderr lines: warnings, then a line after a conflict (nothing after a clean merge: git
 * reports the path itself).
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderOutcome = (outcome: DriverOutcome, request: MergeDriverRequest): string => {
  const name = shownPath(request.pathName ?? request.current)
  const warnings = outcome.warnings.map((w) => `forkjoin merge-driver: ${name}: warning: ${w}\n`).join("")
  return warnings + conflictLine(outcome, name)
}

const conflictLine = (outcome: DriverOutcome, name: string): string => {
  switch (outcome._tag) {
    case "Clean":
      return ""
    case "Held":
      return `forkjoin merge-driver: ${name}: the changes merged by lines, but the result ${
        outcome.reason === "duplicate_member" ? "names a key or member twice" : "no longer parses"
      } (neither side did) and merging by syntax did not settle it; the line merge is in the file without markers: fix it by hand\n`
    case "Conflicted":
      return `forkjoin merge-driver: ${name}: ${outcome.conflicts} conflict${outcome.conflicts === 1 ? "" : "s"} marked between <<<<<<< and >>>>>>>\n`
    case "KeptCurrent":
      return `forkjoin merge-driver: ${name}: both sides changed it and a version is binary, so it cannot be merged by lines; ` +
        `kept the current version: choose one with 'git checkout --ours -- ${name}' or '--theirs', then 'git add ${name}'\n`
  }
}
