/**
 * The `forkjoin agents` command: flags and help, wired to `Agents.ts`.
 *
 * @since 0.1.0
 */
import { Argument, Command } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { command } from "./internal/command.ts"
import { jsonLineFlag, workspaceFlags, workspaceInput } from "./internal/flags.ts"
import { writeStdout } from "./internal/output.ts"

/**
 * `forkjoin agents [AGENT_ID] [--workspace DIR] [--db FILE] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const agents = command(
  "agents",
  {
    id: Argument.String("AGENT_ID").pipe(Argument.withDescription("One session to show in full: its id whole or as 'forkjoin agents' shows it (at least 4 characters of its UUID, e.g. agent-1f2e)"), Argument.optional),
    ...workspaceFlags(),
    json: jsonLineFlag(
      "{\"ok\":true,\"agents\":[{agentId,kind,threadId,provider,model,client,task,status,steps,usage,runIds,startedAt,endedAt,transcript}]}; " +
        "with AGENT_ID {\"ok\":true,\"agent\":{session,toolCalls,messages},\"runs\":[...]}"
    )
  },
  function*(input) {
    const Agents = yield* Effect.promise(() => import("./Agents.ts"))
    if (Option.isNone(input.id)) {
      const sessions = yield* Agents.list({ workspace: input.workspace })
      return yield* writeStdout(input.json ? Agents.renderListJson(sessions) : Agents.renderListText(sessions))
    }
    const shown = yield* Agents.show({ ...workspaceInput(input), id: input.id.value, shortIds: !input.json })
    yield* writeStdout(input.json ? Agents.renderShowJson(shown) : Agents.renderShowText(shown))
  }
).pipe(
  Command.withDescription(
    "List the agent sessions of this workspace, oldest first: forkjoin agent sessions (kind agent) and forkjoin mcp " +
      "client connections (kind mcp), each with its id, provider/model, status, when it started, steps, tokens, the runs " +
      "it started and its task (or MCP client). With AGENT_ID, one session in full: its thread, every tool call and its " +
      "result, the runs it started and their children's outcomes, and the file that keeps it. Text shows ids shortened " +
      "(--json whole); AGENT_ID may be either. Reads only. Exit 0, 1 when the history cannot be read or AGENT_ID names " +
      "several sessions (ambiguous_id: give more characters), 2 usage error (an unknown AGENT_ID)."
  ),
  Command.withShortDescription("List agent sessions (forkjoin agent and forkjoin mcp), or show one"),
  Command.withExamples([
    { command: "forkjoin agents", description: "Every agent session here" },
    { command: "forkjoin agents agent-1f2e --json", description: "One session (by its short id) as JSON" }
  ])
)
