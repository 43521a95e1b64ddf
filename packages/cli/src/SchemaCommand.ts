/**
 * The `forkjoin schema` command: its argument and help text, wired to the documents in
 * `Schema.ts` (loaded on demand). Exit 0 printed, 2 usage error (an unknown name).
 *
 * @since 0.1.0
 */
import { Argument, Command } from "effect/cli"
import * as Effect from "effect/Effect"
import type * as SchemaModule from "./Schema.ts"
import { command } from "./internal/command.ts"
import { writeStdout } from "./internal/output.ts"

// Kept here, not read from Schema.ts, so parsing and help do not load the schemas;
// `satisfies` keeps the list and the documents in step.
const NAMES = ["plan", "changeset", "record", "codex-turn-diff", "claude-tool-event", "merge-file", "agents", "agent"] as const satisfies ReadonlyArray<
  SchemaModule.SchemaName
>

/**
 * `forkjoin schema plan|changeset|record|codex-turn-diff|claude-tool-event|merge-file|agents|agent`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const schema = command(
  "schema",
  {
    name: Argument.Literals("NAME", NAMES).pipe(
      Argument.withDescription(
        "plan (the plan file of 'forkjoin run'), changeset (what a child exports), record (a patch history record), " +
          "codex-turn-diff or claude-tool-event (the inputs of 'forkjoin history ingest --format'), merge-file, agents or " +
          "agent (the --json lines of 'forkjoin merge-file', 'forkjoin agents' and 'forkjoin agents ID')"
      )
    )
  },
  function*(input) {
    // Loaded on demand, like every command but apply/repair: start-up only pays for what runs.
    const Schema = yield* Effect.promise(() => import("./Schema.ts"))
    yield* writeStdout(Schema.render(input.name))
  }
).pipe(
  Command.withDescription(
    "Print the JSON Schema (draft 2020-12) of a file forkjoin reads or writes, generated from the schema that " +
      "decodes it: 'plan' for 'forkjoin run' plan files, 'changeset' for exported changesets ('run --export-only " +
      "--json', results[].changeset), 'record' for patch history records ('apply --json', the history views), " +
      "'codex-turn-diff' and 'claude-tool-event' for the provider events 'history ingest --format' reads (a turn " +
      "diff is raw unified-diff text; its schema describes it as a JSON string), 'merge-file', 'agents' and 'agent' for " +
      "the --json lines of 'forkjoin merge-file', 'forkjoin agents' and 'forkjoin agents ID'. Point " +
      "an editor at the plan schema to check plan files as you type (in VS Code, a \"json.schemas\" entry with a " +
      "fileMatch). The schema is a first check: forkjoin's own validation has the last word (path rules, unique ids, " +
      "exactly one of actions and changesetFile) and names the JSON path of the first problem. Exit 0 printed, 2 " +
      "usage error."
  ),
  Command.withShortDescription("Print the JSON Schema of plan files, changesets, history records or provider events"),
  Command.withExamples([
    { command: "forkjoin schema plan > plan.schema.json", description: "Save the plan file's schema for an editor" },
    { command: "forkjoin schema record", description: "The shape of the record 'forkjoin apply --json' prints" },
    {
      command: "forkjoin schema claude-tool-event",
      description: "The Claude Edit/Write/MultiEdit event 'forkjoin history ingest' reads"
    }
  ])
)
