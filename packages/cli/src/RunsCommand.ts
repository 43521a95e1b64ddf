/**
 * The `forkjoin runs` command: flags and help, wired to `Runs.ts`.
 *
 * @since 0.1.0
 */
import { Command } from "effect/cli"
import * as Effect from "effect/Effect"
import { command } from "./internal/command.ts"
import { jsonLineFlag, workspaceFlags, workspaceInput } from "./internal/flags.ts"
import { writeStdout } from "./internal/output.ts"

/**
 * `forkjoin runs [--workspace DIR] [--db FILE] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runs = command(
  "runs",
  {
    ...workspaceFlags(),
    json: jsonLineFlag("{\"ok\":true,\"runs\":[{\"run\":{runId,status,threadId,callerThreadId,outcomes,createdAt,...},\"agentId\"}]}")
  },
  function*(input) {
    const Runs = yield* Effect.promise(() => import("./Runs.ts"))
    const request = workspaceInput(input)
    const entries = yield* Runs.list(request)
    yield* writeStdout(input.json ? Runs.renderJson(entries) : Runs.renderText(entries, yield* Runs.displayIds(request)))
  }
).pipe(
  Command.withDescription(
    "List the joins of this workspace, oldest first, whoever started them (forkjoin run, forkjoin agent, forkjoin mcp): " +
      "each run's id, status, when it started, the thread or agent session that started it, and each child's outcome. " +
      "Reads only. Exit 0, 1 when the history cannot be read, 2 usage error."
  ),
  Command.withShortDescription("List the runs (joins) and their children's outcomes"),
  Command.withExamples([
    { command: "forkjoin runs", description: "Every run here, with its children" },
    { command: "forkjoin runs --json", description: "The runs as one JSON line" }
  ])
)
