/**
 * The `forkjoin agent` command: its argument, flags and help text, wired to the program in
 * `Agent.ts` (loaded on demand). Exit 0 the parent finished cleanly, 1 it did not or the gate
 * refused its mutating children, 2 usage or configuration error.
 *
 * @since 0.1.0
 */
import { ThreadId } from "@forkjoin/schema/Ids"
import { Argument, Command, Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { command } from "./internal/command.ts"
import { jsonLineFlag, optionalInt, optionalText, threadFlag, workspaceFlags, workspaceInput } from "./internal/flags.ts"
import { CommandExit, writeStderr, writeStdout } from "./internal/output.ts"

/**
 * `forkjoin agent "TASK" --workspace DIR [--provider openai|anthropic] [--model NAME] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const agent = command(
  "agent",
  {
    task: Argument.String("TASK").pipe(Argument.withDescription("What the parent model should do, in words")),
    ...workspaceFlags(),
    provider: Flag.Literals("provider", ["openai", "anthropic"]).pipe(
      Flag.withDescription("openai: any OpenAI-compatible Chat Completions API (OPENAI_BASE_URL, OPENAI_API_KEY); anthropic: the Messages API (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY). Default: forkjoin.config.json models.provider, else openai"),
      Flag.optional
    ),
    model: optionalText("model", "NAME", "The model (default: forkjoin.config.json models.model or models.providers.<provider>.model)"),
    thread: threadFlag("ID", "The parent's thread; children are registered below it (default 'agent')"),
    maxSteps: optionalInt("max-steps", "N", "Most tool calls of the parent (default: models.limits.parent.maxSteps, else 200)"),
    tokenBudget: optionalInt("token-budget", "N", "Most input plus output tokens of the parent (default: models.limits.parent.tokenBudget, else unlimited)"),
    json: jsonLineFlag("{\"ok\",\"runId\",\"agentId\",\"transcripts\",\"mergeExecution\",\"finish\",\"runs\",\"gateRefusals\",\"usage\",\"steps\"}")
  },
  function*(input) {
    const Agent = yield* Effect.promise(() => import("./Agent.ts"))
    const result = yield* Agent.agent({
      task: input.task,
      ...workspaceInput(input),
      provider: Option.getOrUndefined(input.provider),
      model: Option.getOrUndefined(input.model),
      threadId: Option.getOrElse(input.thread, () => ThreadId.make("agent")),
      maxSteps: Option.getOrUndefined(input.maxSteps),
      tokenBudget: Option.getOrUndefined(input.tokenBudget),
      // The parent's and children's steps live for a person at a terminal; --json and pipes stay quiet.
      progress: !input.json && process.stderr.isTTY === true ? (line: string) => writeStderr(`  ${line}\n`) : undefined,
      shortIds: !input.json
    }).pipe(
      Effect.onInterrupt(() =>
        writeStderr("forkjoin agent was interrupted: running children write nothing. If a join had started, 'forkjoin status' lists it.\n")
      )
    )
    yield* writeStderr(Agent.renderStderr(result))
    yield* writeStdout(input.json ? Agent.renderJson(result) : Agent.renderText(result))
    const code = Agent.exitCodeOf(result)
    if (code !== 0) return yield* new CommandExit({ exitCode: code })
  }
).pipe(
  Command.withDescription(
    "Run a parent model session in the workspace: the model reads, patches (through the engine, in its thread) and " +
      "forks children with run_subagents (tasks with a prompt, a mode and a write scope); children are model sessions " +
      "confined to their scopes, joined as 'forkjoin run' joins them, and any held conflict comes back to the parent, " +
      "which must resolve it before finish. Mutating children start only when the autonomy level allows them " +
      "('forkjoin config explain'): a refusal is printed on stderr and exits 1; at bold the skipped gate is a warning. The model: forkjoin.config.json \"models\", or OPENAI_BASE_URL/OPENAI_API_KEY " +
      "(--provider anthropic: ANTHROPIC_BASE_URL/ANTHROPIC_API_KEY) with --model; a loopback base URL needs no key. " +
      "Transcripts go to <workspace>/.forkjoin/runs/, API keys redacted. Exit 0 the parent finished cleanly, 1 it did not (step limit, " +
      "token budget, open conflicts, provider failure) or mutating children were refused, 2 usage or configuration error."
  ),
  Command.withShortDescription("Run a model-driven parent session that forks and joins model-driven children")
)
