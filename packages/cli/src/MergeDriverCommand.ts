/**
 * The `forkjoin merge-driver` command: its arguments and help text, wired to the program in
 * `MergeDriver.ts`. Exit 0 clean, 1 conflict, 2 usage error or an input that cannot be used,
 * 255 a failed write (git counts every non-zero exit as a conflict).
 *
 * @since 0.1.0
 */
import { Argument, Command } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { command } from "./internal/command.ts"
import * as Colour from "./internal/colour.ts"
import { CommandExit, writeStderr } from "./internal/output.ts"

/**
 * `forkjoin merge-driver BASE CURRENT OTHER [PATH]` (git's `%O %A %B %P`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const mergeDriver = command(
  "merge-driver",
  {
    base: Argument.String("BASE").pipe(Argument.withDescription("git's %O: the common ancestor's version")),
    current: Argument.String("CURRENT").pipe(Argument.withDescription("git's %A: the current version; it receives the result")),
    other: Argument.String("OTHER").pipe(Argument.withDescription("git's %B: the other branch's version")),
    pathName: Argument.String("PATH").pipe(Argument.withDescription("git's %P: the path being merged, for messages and to tell the file's language"), Argument.optional)
  },
  function*(input) {
    const MergeDriver = yield* Effect.promise(() => import("./MergeDriver.ts"))
    const MergeFile = yield* Effect.promise(() => import("./MergeFile.ts"))
    const request = { base: input.base, current: input.current, other: input.other, pathName: Option.getOrUndefined(input.pathName) }
    const { Grammars } = yield* Effect.promise(() => import("@forkjoin/merge/Grammars"))
    const outcome = yield* MergeDriver.runDriver(request).pipe(
      Effect.provide(Grammars.layer),
      Effect.catchTag("MergeFileError", (error) =>
        Effect.gen(function*() {
          const out = MergeFile.failureOutput(error, false, Colour.forStderr())
          yield* writeStderr(`forkjoin merge-driver: ${out.stderr}`)
          return yield* new CommandExit({ exitCode: out.exitCode })
        }))
    )
    yield* writeStderr(MergeDriver.renderOutcome(outcome, request))
    const exitCode = MergeDriver.driverExitCode(outcome)
    if (exitCode !== 0) return yield* new CommandExit({ exitCode })
  }
).pipe(
  Command.withDescription(
    "forkjoin's merge as a git merge driver: git runs it for each path both sides changed whose .gitattributes " +
      "entry says merge=forkjoin, in merge, rebase and cherry-pick. Set it up once with git config " +
      "merge.forkjoin.driver \"forkjoin merge-driver %O %A %B %P\" (and merge.forkjoin.name). It merges OTHER into " +
      "CURRENT relative to BASE and writes the result into CURRENT in one step (a temp file beside it, then a " +
      "rename), so CURRENT is never left half-written: where both sides changed the same lines it holds both " +
      "between <<<<<<< ours, ||||||| base, ======= and >>>>>>> theirs markers. A TypeScript, JavaScript, Python or JSON path (by its extension) is merged by " +
      "syntax tree where the lines conflict, as merge-file does. A binary file both sides changed " +
      "keeps the current version. Exit 0 clean, 1 conflict, 2 usage error or an input that cannot be used, 255 a " +
      "failed write (CURRENT unchanged)."
  ),
  Command.withShortDescription("Merge one path for git (a git merge driver)"),
  Command.withExamples([
    {
      command: "git config merge.forkjoin.driver \"forkjoin merge-driver %O %A %B %P\"",
      description: "Register the driver (then add '*.ts merge=forkjoin' to .gitattributes)"
    }
  ])
)
