/**
 * The shapes of the two provider inputs `forkjoin history ingest` accepts (SPEC §4.6), as Effect
 * schemas: a Codex turn diff (the text of a git-style unified diff) and a managed Claude Edit /
 * Write / MultiEdit tool event (JSON, as a PostToolUse hook receives it or as a `tool_use`
 * block). The parser in `internal/providerFormats.ts` decodes with them, and `forkjoin schema`
 * prints their JSON Schemas.
 *
 * Owns the shapes only: what the parser reads, and the leniency it has always had (unknown keys
 * ignored, hook fields such as `session_id` allowed). It does not own parsing the diff's
 * sections and hunks, applying edits, or mapping paths into the workspace (the parser and
 * `ProviderAggregates` do), so a value these schemas accept can still be refused there (a
 * malformed hunk header, a path outside the workspace).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

// -------------------------------------------------------------------------------------
// Codex
// -------------------------------------------------------------------------------------

/**
 * A Codex turn diff: a git-style unified diff of the files one turn changed (the
 * `unified_diff` of Codex's `turn_diff` event), whose first line starts a file section
 * (`diff --git ` or `--- `). The input is the raw text, not JSON.
 *
 * @category models
 * @since 0.1.0
 */
export const CodexTurnDiff = Schema.String.annotate({ contentMediaType: "text/x-diff" }).check(
  Schema.isPattern(/^(?:diff --git |--- )/u, {
    expected: "a unified diff whose first line starts a file section ('diff --git ' or '--- ')"
  })
)

/**
 * The type of a Codex turn diff (a string).
 *
 * @category models
 * @since 0.1.0
 */
export type CodexTurnDiff = typeof CodexTurnDiff.Type

// -------------------------------------------------------------------------------------
// Claude
// -------------------------------------------------------------------------------------

const filePath = Schema.String.pipe(
  Schema.annotateKey({ description: "The file the tool changed: absolute inside the workspace, or workspace-relative." })
)

// The parser only tests `replace_all === true`; any other value has always meant "the first
// occurrence", so the schema does not refuse it.
const replaceAll = Schema.optionalKey(Schema.Unknown).pipe(
  Schema.annotateKey({ description: "true replaces every occurrence of old_string; absent (or anything else), the first." })
)

/**
 * One replacement of an Edit (its `tool_input`) or of a MultiEdit's `edits`: `old_string`
 * ("" only on an empty file) replaced by `new_string`.
 *
 * @category models
 * @since 0.1.0
 */
export const ClaudeEditOperation = Schema.Struct({
  old_string: Schema.String.pipe(Schema.annotateKey({ description: "The text replaced ('' creates an empty file's content)." })),
  new_string: Schema.String.pipe(Schema.annotateKey({ description: "The text put in its place." })),
  replace_all: replaceAll
})

/**
 * The `tool_input` of an Edit: the file and one replacement.
 *
 * @category models
 * @since 0.1.0
 */
export const ClaudeEditInput = Schema.Struct({ file_path: filePath, ...ClaudeEditOperation.fields })

/**
 * The `tool_input` of a MultiEdit: the file and its replacements, applied in order.
 *
 * @category models
 * @since 0.1.0
 */
export const ClaudeMultiEditInput = Schema.Struct({
  file_path: filePath,
  edits: Schema.Array(ClaudeEditOperation).check(Schema.isMinLength(1, { expected: "at least one edit" })).pipe(
    Schema.annotateKey({ description: "The replacements, applied in order (at least one)." })
  )
})

/**
 * The `tool_input` of a Write: the file and its whole new content.
 *
 * @category models
 * @since 0.1.0
 */
export const ClaudeWriteInput = Schema.Struct({
  file_path: filePath,
  content: Schema.String.pipe(Schema.annotateKey({ description: "The file's whole content after the write." }))
})

/**
 * The tools whose events are ingested, with the `tool_input` each carries.
 *
 * @category models
 * @since 0.1.0
 */
export const claudeToolInputs = {
  Edit: ClaudeEditInput,
  Write: ClaudeWriteInput,
  MultiEdit: ClaudeMultiEditInput
} as const

/**
 * The name of a tool whose events are ingested.
 *
 * @category models
 * @since 0.1.0
 */
export const ClaudeFileTool = Schema.Literals(["Edit", "Write", "MultiEdit"])

/**
 * The type of a file-changing tool's name.
 *
 * @category models
 * @since 0.1.0
 */
export type ClaudeFileTool = typeof ClaudeFileTool.Type

/**
 * What the tool returned (`tool_response` of a hook event, `tool_result` beside a `tool_use`
 * block): any value. When it is an object, its `originalFile` (a string, or null for a new
 * file) and `type` (`create`) are read; anything else in it, or a response that is not an
 * object, is ignored, as it always was, so the schema imposes no shape.
 *
 * @category models
 * @since 0.1.0
 */
export const ClaudeToolResponse = Schema.Unknown

const response = Schema.optionalKey(ClaudeToolResponse).pipe(Schema.annotateKey({
  description: "The tool's result. Read when it is an object: originalFile (a string: the file before the tool ran, so " +
    "the change's before and after content are known; null: the file did not exist) and type ('create': a Write " +
    "created the file). Anything else here is ignored."
}))

// The two envelopes a tool call arrives in, for one tool.
const hookEvent = <I extends Schema.Top>(tool: ClaudeFileTool, input: I) =>
  Schema.Struct({
    tool_name: Schema.Literal(tool),
    tool_input: input,
    tool_response: response
  }).annotate({ title: `${tool} (hook event)` })

const toolUseBlock = <I extends Schema.Top>(tool: ClaudeFileTool, input: I) =>
  Schema.Struct({
    type: Schema.Literal("tool_use"),
    name: Schema.Literal(tool),
    input,
    tool_result: response
  }).annotate({ title: `${tool} (tool_use block)` })

/**
 * A managed Claude tool event: an Edit, Write or MultiEdit call as a Claude Code PostToolUse
 * hook receives it (`tool_name`, `tool_input`, `tool_response`; other hook keys such as
 * `session_id` are ignored) or as a `tool_use` content block (`type`, `name`, `input`, and
 * optionally `tool_result`).
 *
 * @category models
 * @since 0.1.0
 */
export const ClaudeToolEvent = Schema.Union([
  hookEvent("Edit", ClaudeEditInput),
  hookEvent("Write", ClaudeWriteInput),
  hookEvent("MultiEdit", ClaudeMultiEditInput),
  toolUseBlock("Edit", ClaudeEditInput),
  toolUseBlock("Write", ClaudeWriteInput),
  toolUseBlock("MultiEdit", ClaudeMultiEditInput)
])

/**
 * The type of a managed Claude tool event.
 *
 * @category models
 * @since 0.1.0
 */
export type ClaudeToolEvent = typeof ClaudeToolEvent.Type
