/**
 * The `forkjoin demo` command: flags and help, wired to `Demo.ts` (loaded on demand).
 *
 * @since 0.1.0
 */
import { Command } from "effect/cli"
import * as Effect from "effect/Effect"
import { command } from "./internal/command.ts"
import { jsonLineFlag, switchFlag } from "./internal/flags.ts"

/**
 * `forkjoin demo [--keep] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const demo = command(
  "demo",
  {
    keep: switchFlag("keep", "Leave the sample workspace in place and print its path"),
    json: jsonLineFlag("the run (as 'forkjoin run --json' prints it), the resolution, the rollback and the timeline")
  },
  function*(input) {
    const Demo = yield* Effect.promise(() => import("./Demo.ts"))
    yield* Demo.demo({ json: input.json, keep: input.keep })
  }
).pipe(
  Command.withDescription(
    "Run the main job on an embedded sample workspace in a temporary folder (your files are never touched): a " +
      "parent forks five children, the join applies the disjoint ones, merges two edits of one file by hunk, holds " +
      "an overlapping edit back as a conflict, resolves it with merged text, rolls one child back and prints the " +
      "timeline. Every line is computed by the real engine on real files."
  ),
  Command.withShortDescription("The fork/join job on a sample workspace")
)
