/**
 * The `forkjoin mcp` command: flags and help text, wired to the server in `Mcp.ts` (loaded on
 * demand). It serves until the client closes stdin; exit 2 on a usage or configuration error.
 *
 * @since 0.1.0
 */
import { ThreadId } from "@forkjoin/schema/Ids"
import { Command, Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { command } from "./internal/command.ts"
import { optionalText, threadFlag, workspaceFlags, workspaceInput } from "./internal/flags.ts"

// Inlined by scripts/build.mjs from the root package.json "version".
declare const __FORKJOIN_VERSION__: string

/**
 * `forkjoin mcp --workspace DIR [--thread T] [--provider P] [--model NAME]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const mcp = command(
  "mcp",
  {
    ...workspaceFlags(),
    thread: threadFlag("T", "The thread every write of this server is recorded in; children are registered below it (default 'mcp')"),
    provider: Flag.Literals("provider", ["openai", "anthropic"]).pipe(
      Flag.withDescription("The provider of run_subagents' prompt tasks (default: forkjoin.config.json models.provider, else openai)"),
      Flag.optional
    ),
    model: optionalText("model", "NAME", "The model of run_subagents' prompt tasks (default: forkjoin.config.json models)")
  },
  function*(input) {
    const Mcp = yield* Effect.promise(() => import("./Mcp.ts"))
    yield* Mcp.mcp({
      ...workspaceInput(input),
      threadId: Option.getOrElse(input.thread, () => ThreadId.make("mcp")),
      provider: Option.getOrUndefined(input.provider),
      model: Option.getOrUndefined(input.model),
      version: typeof __FORKJOIN_VERSION__ === "string" ? __FORKJOIN_VERSION__ : "0.0.0-dev"
    })
  }
).pipe(
  Command.withDescription(
    "Serve this workspace to an MCP client over stdio (the client starts this command). Tools: apply_patch, read_file, " +
      "list_dir (every write through the engine, recorded in the server's thread), run_subagents (tasks with scripted " +
      "actions, a changesetFile or a prompt for the configured model), resolve_conflict, rollback_transaction, " +
      "history_timeline, history_file and gate_decision. A refused action is a tool result with isError true carrying " +
      "the observation. Stdout carries only JSON-RPC, one message per line of at most 16 MiB (a larger, non-JSON or too " +
      "deeply nested line is answered with a JSON-RPC error); logs go to stderr. Mutating children obey the autonomy " +
      "level as in 'forkjoin run'. Client configuration: " +
      "{\"mcpServers\":{\"forkjoin\":{\"command\":\"forkjoin\",\"args\":[\"mcp\",\"--workspace\",\"/path/to/repo\"]}}}"
  ),
  Command.withShortDescription("Serve the workspace's tools to an MCP client (Claude Code, Codex CLI, Cursor) over stdio")
)
