/**
 * The `forkjoin merge-file` command: its arguments, flags, help text and examples, wired to the
 * program in `MergeFile.ts`. Exit 0 clean, the number of conflicts (at most 127) when the result
 * has conflict markers, 2 usage error or an input that cannot be used, 255 other errors.
 *
 * @since 0.1.0
 */
import { Language } from "@forkjoin/merge/Syntax"
import { Argument, Command, Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { command } from "./internal/command.ts"
import { UsageError } from "./internal/errors.ts"
import * as Colour from "./internal/colour.ts"
import { jsonLineFlag } from "./internal/flags.ts"
import { CommandExit, writeStderr, writeStdout } from "./internal/output.ts"

/**
 * `forkjoin merge-file OURS BASE THEIRS [-p | -o FILE] [-L LABEL]... [--language L] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const mergeFile = command(
  "merge-file",
  {
    ours: Argument.String("OURS").pipe(Argument.withDescription("Your version; it receives the result unless -p or -o is given")),
    base: Argument.String("BASE").pipe(Argument.withDescription("The common ancestor both versions started from")),
    theirs: Argument.String("THEIRS").pipe(Argument.withDescription("The other version, merged into yours")),
    stdout: Flag.Boolean("stdout").pipe(
      Flag.withAlias("p"),
      Flag.withDescription("Print the result on stdout instead of writing it; no file is touched"),
      Flag.withDefault(false)
    ),
    output: Flag.String("output").pipe(
      Flag.withAlias("o"),
      Flag.withMetavar("FILE"),
      Flag.withDescription("Write the result to FILE instead of OURS (created if missing; a symbolic link is written through)"),
      Flag.optional
    ),
    labels: Flag.String("label").pipe(
      Flag.withAlias("L"),
      Flag.withMetavar("LABEL"),
      Flag.withDescription(
        "The words after the conflict markers instead of the file names: the first -L for OURS (<<<<<<<), the second " +
          "for BASE (|||||||), the third for THEIRS (>>>>>>>)"
      ),
      Flag.atMost(3)
    ),
    language: Flag.Literals("language", Language.literals).pipe(
      Flag.withMetavar("LANG"),
      Flag.withDescription(
        `Merge by syntax tree as this language where the line merge conflicts or its result repeats a key or no longer ` +
          `parses: ${Language.literals.join(", ")} (default: from OURS's extension; other files merge by lines)`
      ),
      Flag.optional
    ),
    json: jsonLineFlag(
      "{\"ok\":true,\"path\",\"clean\",\"conflicts\",\"method\",\"language\"?,\"reason\"?} or " +
        "{\"ok\":false,\"error\":{\"code\",\"paths\",\"message\"}} (not with -p)"
    )
  },
  function*(input) {
    const output = Option.getOrUndefined(input.output)
    if (input.stdout && output !== undefined) {
      return yield* new UsageError({ message: "-p prints the result and -o writes it to a file: give one of them" })
    }
    if (input.stdout && input.json) {
      return yield* new UsageError({ message: "-p prints the result on stdout, where --json prints its line: use -o FILE with --json" })
    }
    const MergeFile = yield* Effect.promise(() => import("./MergeFile.ts"))
    // Grammars load only if the merge needs one (both sides changed a file in a known language).
    const { Grammars } = yield* Effect.promise(() => import("@forkjoin/merge/Grammars"))
    const result = yield* MergeFile.mergeFiles({
      ours: input.ours,
      base: input.base,
      theirs: input.theirs,
      output,
      toStdout: input.stdout,
      labels: input.labels,
      language: Option.getOrUndefined(input.language)
    }).pipe(
      Effect.provide(Grammars.layer),
      Effect.catchTag("MergeFileError", (error) =>
        Effect.gen(function*() {
          const out = MergeFile.failureOutput(error, input.json, input.json ? Colour.plain : Colour.forStderr())
          if (out.stdout !== "") yield* writeStdout(out.stdout)
          if (out.stderr !== "") yield* writeStderr(out.stderr)
          return yield* new CommandExit({ exitCode: out.exitCode })
        }))
    )
    yield* writeStderr(MergeFile.renderWarnings(result.warnings))
    if (result.printed !== undefined) {
      const bytes = result.printed
      yield* Effect.sync(() => process.stdout.write(bytes))
    }
    if (input.json) yield* writeStdout(MergeFile.renderJson(result.report))
    else yield* writeStderr(MergeFile.renderConflicts(result.report))
    if (result.report.conflicts > 0) return yield* new CommandExit({ exitCode: MergeFile.conflictExitCode(result.report.conflicts) })
  }
).pipe(
  Command.withDescription(
    "Three-way merge of three files, as 'git merge-file' does it: the changes from BASE to THEIRS are merged into " +
      "OURS. The result goes into OURS (replaced in one step: a temp file in its folder, then a rename; a symbolic " +
      "link is written through), into FILE with -o, or to stdout with -p. Where both sides changed the same lines " +
      "the result holds both between <<<<<<< OURS, ||||||| BASE, ======= and >>>>>>> THEIRS markers, labelled with " +
      "the file names or the -L labels. TypeScript, JavaScript, Python and JSON files (by OURS's extension, or " +
      "--language) that conflict by lines are merged by syntax tree where they can be (imports, members, keys both " +
      "sides added), and a clean line merge that names a key twice or no longer parses is held as one conflict. " +
      "Works on any files: no workspace is needed and none is recorded. A missing " +
      "input, a directory or a file that cannot be read writes nothing (exit 2); so does a binary file both sides " +
      "changed (exit 255). Exit 0 clean, the number of conflicts (at most 127) when markers were written, 2 usage " +
      "error or an input that cannot be used, 255 other errors. An exit of 2 is also two conflicts: --json tells " +
      "them apart."
  ),
  Command.withShortDescription("Merge three files as git merge-file does (outside any workspace)"),
  Command.withExamples([
    { command: "forkjoin merge-file mine.ts base.ts theirs.ts", description: "Merge theirs.ts's changes into mine.ts" },
    {
      command: "forkjoin merge-file -p -L mine -L base -L upstream a.py o.py b.py > merged.py",
      description: "Print the result with labelled markers, touching no input"
    },
    { command: "forkjoin merge-file -o out.json --json a.json o.json b.json", description: "Write the result to out.json and print one JSON line" }
  ])
)
