/**
 * `forkjoin schema NAME`: the JSON Schemas (draft 2020-12) of the files a user writes or reads
 * — the plan file of `forkjoin run`, a changeset a child exports, a patch history record —
 * generated from the Effect schemas that decode them, so editors can validate a plan before
 * forkjoin sees it and tools can check what forkjoin prints.
 *
 * Owns the documents: which schema each name prints, its `$id`, title and descriptions, and
 * the plan's editor view (its actions typed instead of decoded one by one). It does not own the
 * formats (`@forkjoin/runtime/RunPlan`, `@forkjoin/schema/Changeset`,
 * `@forkjoin/schema/PatchHistoryRecord`), which stay the final authority: a generated JSON
 * Schema is a preliminary check (custom filters such as path rules are not expressible).
 * The `--json` lines whose whole shape is a schema are documents too: `merge-file`
 * (`MergeFileReport.ts`), `agents` and `agents ID` (`@forkjoin/schema/WorkspaceIndex`); the
 * other commands print records (`record`) inside lines they assemble. The two provider inputs
 * of `forkjoin history ingest` (`@forkjoin/history/ProviderInputs`) are documents too: the Claude tool event is JSON; the Codex turn diff is raw text, so its
 * document describes it as a JSON string (as it travels in Codex's `turn_diff` event).
 *
 * @since 0.1.0
 */
import { Action } from "@forkjoin/runtime/Action"
import { RunPlanInput, TaskInput } from "@forkjoin/runtime/RunPlan"
import { ClaudeToolEvent, CodexTurnDiff } from "@forkjoin/history/ProviderInputs"
import { Changeset } from "@forkjoin/schema/Changeset"
import { PatchHistoryRecord } from "@forkjoin/schema/PatchHistoryRecord"
import { AgentShow, AgentsList } from "@forkjoin/schema/WorkspaceIndex"
import * as JsonSchema from "effect/JsonSchema"
import * as Schema from "effect/Schema"
import { MergeFileFailure, MergeFileReport } from "./MergeFileReport.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

// Key-level: a value annotation is dropped where the value carries a filter JSON Schema cannot
// express (ids, paths), a key annotation never is.
const described = <S extends Schema.Top>(field: S, description: string): S["Rebuild"] =>
  field.pipe(Schema.annotateKey({ description }))

/**
 * The plan file as an editor sees it: `RunPlanInput` with each task's `actions` typed as the
 * action protocol's one-key objects (the runtime decodes them one at a time so an unknown name
 * gets its own message) and a description on every key. Fields added to `RunPlanInput` or
 * `TaskInput` appear here unchanged.
 *
 * @category models
 * @since 0.1.0
 */
export const PlanFile = RunPlanInput.mapFields((plan) => ({
  ...plan,
  schemaVersion: described(plan.schemaVersion, "The plan format's version: 1."),
  autonomy: described(
    plan.autonomy,
    "Lowers the autonomy level for this run (it can never raise the configured one): 'off' and 'supervised' " +
      "allow read-only children only; 'safe' allows mutating children when the promotion gate passes; 'bold' " +
      "without evidence. Without the key the configured level applies ('forkjoin config explain')."
  ),
  tasks: described(
    Schema.Array(TaskInput.mapFields((task) => ({
      ...task,
      id: described(task.id, "Unique task id: 1-128 of [A-Za-z0-9._-], starting with a letter, digit or '_'."),
      mode: described(
        task.mode,
        "'transactional_write' stages edits in an overlay confined to writeScope and exports a changeset; " +
          "'read_only' may only read."
      ),
      writeScope: described(
        task.writeScope,
        "The workspace-relative directories or files a transactional_write task may change (required and non-empty " +
          "for it, absent for read_only). Paths, not globs: '*' and '?' are refused, as is any .git or .forkjoin folder."
      ),
      maxAttempts: described(task.maxAttempts, "Attempts before the child fails, 1-3 (default 1)."),
      timeoutMs: described(task.timeoutMs, "The child's deadline in milliseconds (default 600000)."),
      actions: described(
        Schema.optionalKey(Schema.Array(Action)),
        "A scripted child: its actions in order, each an object with one key, the action name. Exactly one of " +
          "actions, prompt and changesetFile."
      ),
      prompt: described(
        task.prompt,
        "A child driven by the configured model (forkjoin.config.json models, or OPENAI_BASE_URL/OPENAI_API_KEY): " +
          "what it is asked to do. Run by 'forkjoin agent' and 'forkjoin mcp'. Exactly one of actions, prompt and changesetFile."
      ),
      changesetFile: described(
        task.changesetFile,
        "A changeset produced elsewhere, relative to the plan file, its blobs in blobs/sha256/<hex> beside it. " +
          "Exactly one of actions, prompt and changesetFile."
      ),
      childVerify: described(
        task.childVerify,
        "The child's own check (transactional_write tasks with actions or a prompt): a command (argv, no shell) and its " +
          "time limit in milliseconds, run after each attempt in a throwaway copy of the workspace with that child's changes. " +
          "A non-zero exit or the time limit fails the attempt (retried up to maxAttempts) and nothing of it is joined."
      )
    }))),
    "The children, joined in this order."
  ),
  between: described(
    plan.between,
    "Edits written directly to the workspace after the children finish and before the join (to rehearse drift)."
  ),
  resolve: described(
    plan.resolve,
    "Resolutions of the run's conflicts, per child (and optionally per path): apply, discard, or content."
  ),
  atomic: described(plan.atomic, "Apply all children or none, as one transaction."),
  verify: described(plan.verify, "A command run after each child is applied; the child is rolled back when it fails.")
}))

/**
 * What `forkjoin schema` prints for each name: the schema, whether keys it does not model are
 * errors (as its decoder treats them), and the document's title and description (which win
 * over the schema's own, so every document opens with what the file is).
 *
 * @category models
 * @since 0.1.0
 */
export const documents = {
  plan: {
    schema: PlanFile,
    // `forkjoin run` decodes plans strictly: an unknown key is a typo to report.
    strict: true,
    title: "forkjoin plan file (schemaVersion 1)",
    description: "The plan of 'forkjoin run PLAN.json': the tasks to run as children, and how to join them."
  },
  changeset: {
    schema: Changeset,
    // Changesets cross a trust boundary and are decoded strictly.
    strict: true,
    title: "forkjoin changeset (schemaVersion 1)",
    description: "What a child exports: per touched path its first preimage and last postimage, content in the blob store " +
      "by sha256 hash ('forkjoin run --export-only --json' prints them under results[].changeset)."
  },
  record: {
    schema: PatchHistoryRecord,
    // Records are read back leniently: a reader of schemaVersion 1 ignores keys it does not know.
    strict: false,
    title: "forkjoin patch history record (schemaVersion 1)",
    description: "One transaction in the patch history, as 'forkjoin apply --json' prints it under record and the " +
      "history views list it."
  },
  "codex-turn-diff": {
    schema: CodexTurnDiff,
    // A string has no keys; the setting only matters to objects.
    strict: false,
    title: "Codex turn diff ('forkjoin history ingest --format codex-turn-diff')",
    description: "A git-style unified diff of the files one Codex turn changed (the unified_diff of a turn_diff " +
      "event). The input file is this text itself, not JSON: file sections start 'diff --git a/P b/P' or '--- a/P' " +
      "then '+++ b/P', with optional 'new file mode', 'deleted file mode', 'rename from' / 'rename to' headers and " +
      "'@@ -l,n +l,n @@' hunks. Only the first line is checked here; forkjoin parses the rest."
  },
  "claude-tool-event": {
    schema: ClaudeToolEvent,
    // Hook events carry keys forkjoin does not read (session_id, cwd, tool_use_id, ...): ignored.
    strict: false,
    title: "Claude tool event ('forkjoin history ingest --format claude-tool-event')",
    description: "A Claude Code Edit, Write or MultiEdit call as a PostToolUse hook receives it (tool_name, " +
      "tool_input, tool_response) or as a tool_use content block (type 'tool_use', name, input, tool_result). A " +
      "response's originalFile lets forkjoin know the file's content before and after."
  },
  "merge-file": {
    schema: Schema.Union([MergeFileReport, MergeFileFailure]),
    // An output: a reader ignores keys a later release adds.
    strict: false,
    title: "forkjoin merge-file --json line",
    description: "The one JSON line 'forkjoin merge-file --json' prints: ok true with where the result went, whether it " +
      "is clean, its conflict count, how it was merged (line or structured, and the language) and why a clean line merge " +
      "was held (reason); or ok false with the error code, the paths and a message when nothing was written."
  },
  agents: {
    schema: AgentsList,
    strict: false,
    title: "forkjoin agents --json line",
    description: "The one JSON line 'forkjoin agents --json' prints (and the gateway's GET /v1/agents returns): every " +
      "forkjoin agent session of the workspace, oldest first."
  },
  agent: {
    schema: AgentShow,
    strict: false,
    title: "forkjoin agents ID --json line",
    description: "The one JSON line 'forkjoin agents ID --json' prints (and GET /v1/agents/{agentId} returns): one agent " +
      "session in full, with its tool calls, and the merge runs it started."
  }
} as const

/**
 * The names `forkjoin schema` accepts.
 *
 * @category models
 * @since 0.1.0
 */
export type SchemaName = keyof typeof documents

/**
 * The `$id` of a document: a URN naming the format and its schemaVersion (forkjoin publishes no
 * schema URL; a URN identifies the document without pretending one exists).
 *
 * @category constructors
 * @since 0.1.0
 */
export const idOf = (name: SchemaName): string => `urn:forkjoin:schema:${name}:1`

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

/**
 * The JSON Schema (draft 2020-12) of `name`, with `$schema`, `$id`, `title`, `description`
 * and any shared definitions under `$defs`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const documentOf = (name: SchemaName): JsonSchema.JsonSchema => {
  const d = documents[name]
  const generated = Schema.toJsonSchemaDocument(d.schema, { onExcessProperty: d.strict ? "error" : "ignore" })
  const { description: _description, title: _title, ...schema } = generated.schema
  return {
    $schema: JsonSchema.META_SCHEMA_URI_DRAFT_2020_12,
    $id: idOf(name),
    title: d.title,
    description: d.description,
    ...schema,
    ...(Object.keys(generated.definitions).length === 0 ? {} : { $defs: generated.definitions })
  }
}

/**
 * What `forkjoin schema NAME` prints: the document as indented JSON and a final newline.
 *
 * @category constructors
 * @since 0.1.0
 */
export const render = (name: SchemaName): string => JSON.stringify(documentOf(name), null, 2) + "\n"
