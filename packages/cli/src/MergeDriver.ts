/**
 * `forkjoin merge-driver %O %A %B %P`: forkjoin's merge as a git merge driver. git hands it the
 * base (%O), the current version (%A, which receives the result) and the other version (%B) as
 * temp files, and the path's name (%P); it reads %A back afterwards. The result replaces %A in
 * one step (`MergeFile.writeAtomically`), so %A is never left half-written; on any failure it
 * keeps the current version. The flags are in `MergeDriverCommand.ts`.
 *
 * @since 0.1.0
 */
import { defaultLabels } from "@forkjoin/merge/TextMerge"
import * as Effect from "effect/Effect"
import { mergeSides, type MergeFileError, readInput, resolveTarget, shownPath, writeAtomically } from "./MergeFile.ts"

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
 * `conflicts` regions between markers) or `KeptCurrent` (both sides changed a binary file:
 * %A is the current version, unchanged).
 *
 * @category models
 * @since 0.1.0
 */
export type DriverOutcome =
  | { readonly _tag: "Clean" }
  | { readonly _tag: "Conflicted"; readonly conflicts: number }
  | { readonly _tag: "KeptCurrent" }

/**
 * Merges %B into %A relative to %O and writes the result into %A (markers included when the
 * sides conflict). Inputs that cannot be read, and a failed write, leave %A as it was.
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
    const merged = mergeSides({ base, ours, theirs }, defaultLabels)
    if (merged._tag === "Unmergeable") return { _tag: "KeptCurrent" } as const
    if (!Buffer.from(merged.bytes).equals(ours)) yield* writeAtomically(target, merged.bytes, request.current)
    return merged._tag === "Clean" ? { _tag: "Clean" } as const : { _tag: "Conflicted", conflicts: merged.conflicts } as const
  })

/**
 * The exit code git reads: 0 clean, 1 a conflict (markers written, or a binary file kept as
 * the current version). git treats any other non-zero code as a conflict too.
 *
 * @category constructors
 * @since 0.1.0
 */
export const driverExitCode = (outcome: DriverOutcome): number => outcome._tag === "Clean" ? 0 : 1

/**
 * The stderr line after a conflict (nothing after a clean merge: git reports the path itself).
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderOutcome = (outcome: DriverOutcome, request: MergeDriverRequest): string => {
  const name = shownPath(request.pathName ?? request.current)
  switch (outcome._tag) {
    case "Clean":
      return ""
    case "Conflicted":
      return `forkjoin merge-driver: ${name}: ${outcome.conflicts} conflict${outcome.conflicts === 1 ? "" : "s"} marked between <<<<<<< and >>>>>>>\n`
    case "KeptCurrent":
      return `forkjoin merge-driver: ${name}: both sides changed it and a version is binary, so it cannot be merged by lines; ` +
        `kept the current version: choose one with 'git checkout --ours -- ${name}' or '--theirs', then 'git add ${name}'\n`
  }
}
