/**
 * The `forkjoin demo` command: flags and help, wired to `Demo.ts` (loaded on demand).
 *
 * @since 0.1.0
 */
import { Command, Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import { reportFailure } from "./internal/errors.ts"

/**
 * `forkjoin demo [--keep] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const demo = Command.make(
  "demo",
  {
    keep: Flag.Boolean("keep").pipe(Flag.withDescription("Leave the sample workspace in place and print its path"), Flag.withDefault(false)),
    json: Flag.Boolean("json").pipe(
      Flag.withDescription("Print one JSON line: the run (as 'forkjoin run --json' prints it), the resolution, the rollback and the timeline"),
      Flag.withDefault(false)
    )
  },
  Effect.fn("forkjoin.demo")(
    function*(input) {
      const Demo = yield* Effect.promise(() => import("./Demo.ts"))
      yield* Demo.demo({ json: input.json, keep: input.keep })
    },
    (effect, input) => Effect.catchTag(effect, ["RunFailed"], reportFailure("demo", input.json))
  )
).pipe(
  Command.withDescription(
    "Run the main job on an embedded sample workspace in a temporary folder (your files are never touched): a " +
      "parent forks five children, the join applies the disjoint ones, merges two edits of one file by hunk, holds " +
      "an overlapping edit back as a conflict, resolves it with merged text, rolls one child back and prints the " +
      "timeline. Every line is computed by the real engine on real files."
  ),
  Command.withShortDescription("The fork/join job on a sample workspace")
)
