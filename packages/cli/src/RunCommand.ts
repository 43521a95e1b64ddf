/**
 * The `forkjoin run` command: its argument, flags and help text, wired to the program in
 * `Run.ts` (loaded on demand). Exit 0 every child finished, 1 otherwise, 2 usage or plan error.
 *
 * @since 0.1.0
 */
import { Argument, Command, Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { reportFailure } from "./internal/errors.ts"
import { dbFlag, workspaceFlag } from "./internal/flags.ts"
import { CommandExit, writeStdout } from "./internal/output.ts"

/**
 * `forkjoin run PLAN.json --workspace DIR --export-only [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const run = Command.make(
  "run",
  {
    planFile: Argument.String("PLAN.json").pipe(Argument.withDescription("Plan file (schemaVersion 1): the tasks to run as children")),
    workspace: workspaceFlag(),
    db: dbFlag,
    json: Flag.Boolean("json").pipe(
      Flag.withDescription("Print one JSON line: {\"runId\",\"results\":[{\"id\",\"status\",\"observations\",\"changeset\"?}]}"),
      Flag.withDefault(false)
    ),
    exportOnly: Flag.Boolean("export-only").pipe(
      Flag.withDescription("Run the children and print their changesets without joining them (required until the orchestrator issue)"),
      Flag.withDefault(false)
    )
  },
  Effect.fn("forkjoin.run")(
    function*(input) {
      // Loaded on demand, like every command but apply/repair: start-up only pays for what runs.
      const Run = yield* Effect.promise(() => import("./Run.ts"))
      const result = yield* Run.run({
        planFile: input.planFile,
        workspace: input.workspace,
        db: Option.getOrUndefined(input.db),
        exportOnly: input.exportOnly
      })
      yield* writeStdout(input.json ? Run.renderJson(result) : Run.renderText(result))
      const code = Run.exitCodeOf(result)
      if (code !== 0) return yield* new CommandExit({ exitCode: code })
    },
    (effect, input) => Effect.catchTag(effect, ["UsageError", "RunFailed"], reportFailure("run", input.json))
  )
).pipe(
  Command.withDescription(
    "Run a plan's children (SPEC §5, §6.1-6.3): mutating tasks stage their edits in an overlay confined to their " +
      "write scope and export a changeset; read-only tasks only read. The shared workspace is never written. Each " +
      "child's trace and changeset go to <workspace>/.forkjoin/runs/<run-id>/subagents/<task-id>/. --export-only is " +
      "required until the join arrives. Exit 0 every child finished, 1 otherwise, 2 usage or plan error."
  ),
  Command.withShortDescription("Run a plan's children and export their changesets (--export-only)")
)
