/**
 * The `forkjoin apply` command: its argument, flags, help text and examples, wired to the
 * program in `Apply.ts`. Exit 0 applied, 1 rejected (workspace untouched), 2 usage error.
 *
 * @since 0.1.0
 */
import { TurnIdInput } from "@forkjoin/schema/Ids"
import { Argument, Command, Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { command } from "./internal/command.ts"
import * as Colour from "./internal/colour.ts"
import { jsonFlag, optionalText, switchFlag, threadFlag, workspaceFlags, workspaceInput } from "./internal/flags.ts"
import { writeStdout } from "./internal/output.ts"
import { withStatusLine } from "./internal/terminalProgress.ts"

/**
 * `forkjoin apply [PATCH_FILE|-] --workspace DIR ...`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const apply = command(
  "apply",
  {
    patchFile: Argument.String("PATCH_FILE").pipe(
      Argument.withDescription("File holding the apply_patch text; '-' or omitted reads it from stdin"),
      Argument.optional
    ),
    ...workspaceFlags("Workspace root the patch's relative paths are resolved against (required)"),
    profile: Flag.Literals("profile", ["native", "codex"]).pipe(
      Flag.withMetavar("native|codex"),
      Flag.withDescription(
        "native (default): rejects ambiguous context, never replaces an existing file unless --allow-overwrite " +
          "is given, keeps line endings, BOM and final newline. codex: the same final state as Codex apply_patch " +
          "(still all-or-nothing), so it replaces an existing file on Add File and Move to, as Codex does"
      ),
      Flag.withDefault("native" as const)
    ),
    thread: threadFlag("ID", "Thread id recorded with the change (default 'cli')"),
    turn: Flag.String("turn").pipe(
      Flag.withSchema(TurnIdInput),
      Flag.withMetavar("ID"),
      Flag.withDescription("Turn id recorded with the change (default 'cli')"),
      Flag.optional
    ),
    json: jsonFlag(
      "Print exactly one JSON line on stdout: {\"ok\":true,\"record\":{...}} (plus \"repairs\":[...] when a crash " +
        "repair ran first) or {\"ok\":false,\"error\":{...}}"
    ),
    allowOverwrite: switchFlag("allow-overwrite",
      "Grant overwrite: with --profile native, an Add File or Move to onto an existing file replaces it " +
        "(refused with target_exists / unsafe_move otherwise). The replaced content stays in the history"
    ),
    server: optionalText("server", "URL", "Apply through a running 'forkjoin serve' at URL (token in FORKJOIN_TOKEN) instead of opening the workspace"),
    preserveLineEndings: switchFlag("preserve-line-endings",
      "With --profile codex, keep CRLF files CRLF (Codex's opt-in mode). native always preserves line endings"
    )
  },
  function*(input) {
    // Loaded on demand: the engine and the history store are not evaluated for other commands.
    const Apply = yield* Effect.promise(() => import("./Apply.ts"))
    const result = yield* Apply.applyFrom(Option.getOrUndefined(input.patchFile), {
      ...workspaceInput(input),
      profile: input.profile,
      preserveLineEndings: input.preserveLineEndings,
      allowOverwrite: input.allowOverwrite,
      threadId: Option.getOrUndefined(input.thread),
      turnId: Option.getOrUndefined(input.turn),
      server: Option.getOrUndefined(input.server),
      shortIds: !input.json
    }).pipe(withStatusLine(input.json))
    yield* writeStdout(
      input.json
        ? Apply.renderJson(result)
        : Apply.renderSuccess(Apply.summaryOf(result.record), Colour.forStdout()) + Apply.renderReplaced(result.record) +
          Apply.renderUndo(result)
    )
  }
).pipe(
  Command.withDescription(
    "Apply one Codex apply_patch patch to a workspace through the native engine, all or nothing. The patch is " +
      "parsed, every target is resolved inside the workspace (symlinks leading outside it, and any .git/ or " +
      ".forkjoin/ folder at any depth, are refused), the full result is planned in memory, the files are locked against other writers, the " +
      "intent is journaled, the files are replaced through fsynced temp files and renames, and one record is " +
      "written to the patch history. Grant: write + create directories; replacing an existing file needs " +
      "--allow-overwrite with --profile native, while --profile codex replaces it as Codex does (a replaced file " +
      "is noted after the summary). The last line names the transaction and the command that undoes it " +
      "(undo: forkjoin rollback <id>). Exit 0 applied, 1 rejected (workspace untouched), 2 usage error."
  ),
  Command.withShortDescription("Apply an apply_patch patch to a workspace, all or nothing"),
  Command.withExamples([
    { command: "forkjoin apply fix.patch --workspace .", description: "Apply fix.patch to the current directory" },
    {
      command: "cat fix.patch | forkjoin apply - --workspace repo --json",
      description: "Read the patch from stdin and print one JSON result line"
    }
  ])
)
