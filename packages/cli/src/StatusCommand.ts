/**
 * The `forkjoin status` command: flags and help, wired to `Status.ts`.
 *
 * @since 0.1.0
 */
import { Command } from "effect/cli"
import * as Effect from "effect/Effect"
import { command } from "./internal/command.ts"
import * as Option from "effect/Option"
import { jsonLineFlag, optionalText, workspaceFlags, workspaceInput } from "./internal/flags.ts"
import { writeStdout } from "./internal/output.ts"

/**
 * `forkjoin status [--workspace DIR] [--db FILE] [--cluster URL] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const status = command(
  "status",
  {
    ...workspaceFlags(),
    json: jsonLineFlag(
      "{\"ok\":true,\"interruptedRuns\":[...],\"openConflicts\":[...],\"verificationFailures\":[...],\"uncertainOutcomes\":[...]," +
        "\"historyResets\":[...],\"repairs\":[...]}, with \"moved\":{\"from\",\"to\"} on the first run after the workspace was moved, " +
        "and \"cluster\":{\"url\",\"runners\",\"unhealthy\"} (or {\"url\",\"error\"}) when a cluster is set"
    ),
    cluster: optionalText("cluster", "URL", "Also list the runners of this cluster (default: \"cluster\" in forkjoin.config.json)")
  },
  function*(input) {
    const Status = yield* Effect.promise(() => import("./Status.ts"))
    const report = yield* Status.status({ ...workspaceInput(input), cluster: Option.getOrUndefined(input.cluster) })
    yield* writeStdout(input.json ? Status.renderJson(report) : Status.renderText(report))
  },
  // Not OrchestratorError: a failure to list unfinished rollbacks ends the process as it always did.
  { reports: ["UsageError", "EngineError", "HistoryCommandError"] }
).pipe(
  Command.withDescription(
    "Show what needs attention: joins a crash interrupted (finish them with 'forkjoin run --resume RUN_ID'), " +
      "open conflicts (resolve them with 'forkjoin resolve') and uncertain outcomes a crash repair left (files " +
      "edited after the crash, left alone: check them, then 'forkjoin repair --ack ID'); also every recorded " +
      "reset of the workspace's history, and the runners of the workspace's cluster when it has one. Opening the workspace runs the startup repair; what it did is printed on " +
      "stderr (and as 'repairs' with --json). Exit 0, 1 on a failure, 2 usage error."
  ),
  Command.withShortDescription("Interrupted runs and open conflicts, uncertain outcomes, history resets")
)
