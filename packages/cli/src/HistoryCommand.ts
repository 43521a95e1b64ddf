/**
 * The `forkjoin history` command group (SPEC §9): flag parsing for `timeline`, `turn`,
 * `diff`, `file`, `ingest`, `verify` and `export-git`, wired to `History.ts`. Exit 0 answered,
 * 1 the history could not answer (refused scope or path, bad cursor, malformed event) or a
 * verification found a mismatch, 2 usage error.
 *
 * @since 0.1.0
 */
import { Argument, Command, Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as HistoryModule from "./History.ts"
import { command, withHelp } from "./internal/command.ts"
import type { HistoryCommandError } from "./internal/errors.ts"
import { jsonLineFlag, optionalInt, optionalText, switchFlag, workspaceFlags, workspaceInput } from "./internal/flags.ts"
import { CommandExit, EXIT_REJECTED, writeStderr, writeStdout } from "./internal/output.ts"

// Loaded on demand: the views, provider formats and git export are a large part of the bundle
// and `forkjoin apply` should not pay their start-up.
const loadHistory = Effect.promise(() => import("./History.ts"))

const common = {
  ...workspaceFlags(),
  thread: optionalText("thread", "ID",
    "Answer as this thread: the query sees it and its registered descendants only (default: the whole workspace, every thread)"
  ),
  json: jsonLineFlag("{\"ok\":true,\"view\",\"items\",\"coverage\",\"truncated\",\"nextCursor\",\"caps\"}"),
  cursor: optionalText("cursor", "CURSOR", "Continue after a previous page (its nextCursor)"),
  limit: optionalInt("limit", "N", "Items per page (default 100, at most 1000)"),
  maxBytes: optionalInt("max-bytes", "N", "Cap on the response's encoded items in bytes (default 1 MiB, at most 16 MiB)")
}

/**
 * After the output: a verification that found mismatches ends the command with exit 1 (the
 * text output also says so on stderr; the `--json` line already carries the error).
 */
const exitOnMismatch = (failure: HistoryCommandError | undefined, json: boolean): Effect.Effect<void, CommandExit> =>
  failure === undefined ? Effect.void : Effect.gen(function*() {
    if (!json) yield* writeStderr(`error[${failure.code}]: ${failure.message}\n`)
    return yield* new CommandExit({ exitCode: EXIT_REJECTED })
  })

type Common = {
  readonly workspace: string
  readonly db: Option.Option<string>
  readonly thread: Option.Option<string>
  readonly json: boolean
  readonly cursor: Option.Option<string>
  readonly limit: Option.Option<number>
  readonly maxBytes: Option.Option<number>
}

// Every subcommand reports its failures as `forkjoin history <name>` (1 refused, 2 usage).
const inHistory = { group: "history" }

/** The workspace, database and thread a history subcommand was given. */
const targetOf = (input: Pick<Common, "workspace" | "db" | "thread">) => ({
  ...workspaceInput(input),
  thread: Option.getOrUndefined(input.thread)
})

/** Runs a view and prints it. */
const runView = (input: Common, request: HistoryModule.ViewRequest) =>
  Effect.flatMap(loadHistory, (History) => History.view(
    targetOf(input),
    {
      cursor: Option.getOrUndefined(input.cursor),
      limit: Option.getOrUndefined(input.limit),
      maxBytes: Option.getOrUndefined(input.maxBytes)
    },
    request,
    !input.json
  ).pipe(
    Effect.flatMap((result) => writeStdout(input.json ? History.renderJson(result) : History.renderText(result)))
  ))

const timeline = command(
  "timeline",
  {
    ...common,
    of: optionalText("of", "THREAD", "Whose timeline: one thread (see 'history threads'; its id whole or shortened); default every thread, or the --thread's"),
    turn: optionalText("turn", "ID", "A turn's timeline instead of a thread's (records in the caller's scope)"),
    descendants: switchFlag("descendants", "Include the thread's descendants' records, interleaved in commit order")
  },
  function*(input) {
    yield* runView(input, {
      view: "timeline",
      of: Option.getOrUndefined(input.of),
      turn: Option.getOrUndefined(input.turn),
      descendants: input.descendants
    })
  },
  inHistory
).pipe(withHelp({
  summary: "The records in commit order: every thread's, or one thread's or turn's",
  description: "List the records in commit order (every thread's by default; --of picks one, --thread answers as a thread), one line each: #N (the commit ordinal), commit time, thread/turn, " +
    "transaction id, exactness, outcome, provenance and the changed paths (the first 10; 'history diff' shows " +
    "them all and takes the #N or the transaction id). --of picks a thread, --turn a turn's records, " +
    "--descendants interleaves the thread's descendants. The coverage line counts the records on this page. An empty " +
    "answer says which threads have records ('forkjoin history threads' lists them).",
  examples: [
    { command: "forkjoin history timeline --workspace .", description: "Every record of the workspace, whichever command wrote it" },
    { command: "forkjoin history timeline --of agent --descendants", description: "The records of forkjoin agent and its children" },
    { command: "forkjoin history timeline --workspace . --turn t1 --json", description: "One turn's records, as one JSON line" }
  ]
}))

const turn = command(
  "turn",
  { ...common, turnId: Argument.String("TURN_ID").pipe(Argument.withDescription("The turn to aggregate")) },
  function*(input) {
    yield* runView(input, { view: "turn", turn: input.turnId })
  },
  inHistory
).pipe(withHelp({
  summary: "A turn's net change per path (moves followed)",
  description: "Combine a turn's records into one net change per path, sorted by path: a file moved twice is one move from " +
    "its first to its last name, a file added then deleted does not appear. Each line gives the change, the " +
    "least certain exactness of the records behind it and how many there are (--json lists their ids).",
  examples: [{ command: "forkjoin history turn t1 --workspace .", description: "What turn t1 changed, path by path" }]
}))

const diff = command(
  "diff",
  {
    ...common,
    record: Argument.String("RECORD").pipe(
      Argument.withDescription(
        "A record id, a transaction id (all its records, in commit order) or #N, the commit ordinal the timeline shows; " +
          "ids whole or shortened as the timeline shows them"
      )
    ),
    maxLines: optionalInt("max-lines", "N", "Cap on diff lines in the response (default 2000)")
  },
  function*(input) {
    yield* runView(input, { view: "diff", target: input.record, maxLines: Option.getOrUndefined(input.maxLines) })
  },
  inHistory
).pipe(withHelp({
  summary: "One record as unified diffs (bounded; binary files summarised)",
  description: "Show a record's changes as unified diffs (3 lines of context) from the contents the history stored. Name it " +
    "by record id, by transaction id (every record of the transaction), or by #N, its commit ordinal in the timeline (quote it in a shell: '#3'). " +
    "Binary files are summarised in one line; a provider aggregate whose contents were not recorded shows the provider's own diff, marked as such. --max-lines caps a page's diff lines.",
  examples: [
    { command: "forkjoin history diff '#3' --workspace .", description: "The third record of the history" },
    { command: "forkjoin history diff TRANSACTION_ID --workspace . --json", description: "A transaction the timeline lists, as JSON" }
  ]
}))

const file = command(
  "file",
  {
    ...common,
    path: Argument.String("PATH").pipe(Argument.withDescription("Workspace-relative path (paths outside the workspace are refused)")),
    noGaps: switchFlag("no-gap-check", "Do not compare the file on disk with its last recorded content")
  },
  function*(input) {
    yield* runView(input, { view: "file", path: input.path, detectGaps: !input.noGaps })
  },
  inHistory
).pipe(withHelp({
  summary: "One file's history across every thread (or --thread's), moves followed",
  description: "List the records that changed one file, in commit order, across every thread (with --thread, that thread and its " +
    "descendants), " +
    "following moves both ways (the same file under its earlier and later names). First the file on disk is " +
    "compared with its last recorded content: a difference (an edit made outside forkjoin) is listed as unrecorded " +
    "(JSON: coverage.unrecordedChanges) and the next write or merge of the file records it as a gap; the view itself " +
    "writes nothing. --no-gap-check skips the comparison. The coverage line counts the records on this page.",
  examples: [{ command: "forkjoin history file src/app.ts --workspace .", description: "Every recorded change of src/app.ts" }]
}))

// The threads view prints its own page shape (with each thread's origin), not the views' common one.
const threadsJson = jsonLineFlag(
  "{\"ok\":true,\"view\":\"threads\",\"items\":[{\"threadId\",\"parentThreadId\",\"records\",\"firstRecordAt\",\"lastRecordAt\"}]," +
    "\"truncated\",\"nextCursor\",\"caps\",\"origins\":{THREAD:{\"runId\",\"childId\",\"agentId\"}}}"
)

const threads = command(
  "threads",
  { ...common, json: threadsJson },
  function*(input) {
    yield* runView(input, { view: "threads" })
  },
  inHistory
).pipe(withHelp({
  summary: "Where the records are: every thread, its parent, records and who made it",
  description: "List the threads of the workspace's history by id, one line each: its parent, how many records it holds, when the " +
    "first and last were committed, and the run (and child, and forkjoin agent session) that made it. forkjoin apply " +
    "writes thread 'cli', forkjoin agent 'agent', forkjoin mcp 'mcp', a run's children '<run-id>/<task-id>'. With " +
    "--thread, only that thread and its descendants.",
  examples: [
    { command: "forkjoin history threads", description: "Every thread with its record count" },
    { command: "forkjoin history timeline --of THREAD", description: "Then one thread's records" }
  ]
}))

const { cursor: _c, limit: _l, maxBytes: _m, ...viewTarget } = common

// Ingestion, verification and the git export act as one thread: 'cli' unless --thread says otherwise.
const target = {
  ...viewTarget,
  thread: optionalText("thread", "ID", "The caller's thread (default 'cli')")
}

const ingest = command(
  "ingest",
  {
    ...target,
    json: jsonLineFlag(
      "{\"ok\":true,\"record\":{...},\"alreadyRecorded\":false,\"verification\":{...}} (verification with --verify); " +
        "a verification mismatch: {\"ok\":false,\"error\":{\"code\":\"verification_mismatch\",\"message\"},\"record\",...}; " +
        "refused: {\"ok\":false,\"error\":{\"code\",\"message\"}}"
    ),
    format: Flag.Literals("format", ["codex-turn-diff", "claude-tool-event"]).pipe(
      Flag.withMetavar("codex-turn-diff|claude-tool-event"),
      Flag.withDescription("The event's format: a Codex turn diff (unified diff) or a Claude Edit/Write/MultiEdit tool event (JSON)")
    ),
    file: Argument.String("FILE").pipe(Argument.withDescription("The event file; '-' reads stdin")),
    turn: optionalText("turn", "ID", "Turn the event belongs to (default 'cli')"),
    id: optionalText("id", "ID", "The provider's id for the event (default: derived from its content; re-ingesting is a no-op)"),
    verify: switchFlag("verify",
      "Also verify the claimed change against the workspace (adds a linked verification record); a mismatch exits 1, " +
        "both records kept"
    )
  },
  function*(input) {
    const History = yield* loadHistory
    const r = yield* History.ingest(targetOf(input), {
      format: input.format,
      file: input.file,
      turn: Option.getOrUndefined(input.turn),
      id: Option.getOrUndefined(input.id),
      verify: input.verify
    })
    yield* writeStdout(
      input.json
        ? History.renderIngestJson(r)
        : History.renderRecordLine(r.alreadyRecorded ? "already recorded" : "ingested", r.record) +
          (r.verification === undefined ? "" : History.renderRecordLine("verification", r.verification))
    )
    yield* exitOnMismatch(r.verification === undefined ? undefined : History.verificationFailure(r.verification), input.json)
  },
  inHistory
).pipe(withHelp({
  summary: "Ingest a Codex turn diff or a Claude tool event as a provider aggregate",
  description: "Record a provider's own account of a change as a provider aggregate: authority codex_aggregate_event or " +
    "managed_claude_patch_engine, provenance provider_aggregate, exactness partial (uncertain when part of it cannot be " +
    "parsed). A malformed event is refused and nothing is recorded; the same event again is 'already recorded' " +
    "and nothing new is written. Exit 0 recorded, 1 refused, 2 usage error."
}))

const verify = command(
  "verify",
  {
    ...target,
    json: jsonLineFlag(
      "{\"ok\":true,\"verification\":{...}}; a mismatch: {\"ok\":false,\"error\":{\"code\":\"verification_mismatch\"," +
        "\"message\"},\"verification\":{...}}; refused: {\"ok\":false,\"error\":{\"code\",\"message\"}}"
    ),
    recordId: Argument.String("RECORD_ID").pipe(Argument.withDescription("The provider aggregate to verify"))
  },
  function*(input) {
    const History = yield* loadHistory
    const r = yield* History.verify(targetOf(input), input.recordId)
    yield* writeStdout(input.json ? History.renderVerifyJson(r) : History.renderRecordLine("verification", r))
    yield* exitOnMismatch(History.verificationFailure(r), input.json)
  },
  inHistory
).pipe(withHelp({
  summary: "Verify a provider aggregate against the workspace (adds a linked record)",
  description: "Check an ingested provider aggregate against the files in the workspace now and record the result as a " +
    "verification record linked to it: exact when every claimed change holds, uncertain with one " +
    "verification_mismatch warning per claim that does not. Exit 0 every claim holds, 1 a mismatch (the " +
    "verification record is kept) or a refusal, 2 usage error."
}))

const exportGit = command(
  "export-git",
  {
    ...target,
    json: jsonLineFlag(
      "{\"ok\":true,\"ref\",\"head\",\"exported\",\"baselines\",\"skipped\",\"gitdir\"} (head null: nothing to " +
        "export); refused: {\"ok\":false,\"error\":{\"code\",\"message\"}}"
    ),
    gitDir: optionalText("git-dir", "DIR",
      "Git directory to write objects and the ref into (default <workspace>/.git, else <workspace>/.forkjoin/git): " +
        "a git directory, an empty folder or a new path; any other folder is refused and nothing is written"
    )
  },
  function*(input) {
    const History = yield* loadHistory
    const r = yield* History.exportGit(targetOf(input), Option.getOrUndefined(input.gitDir))
    yield* writeStdout(
      input.json
        ? JSON.stringify({ ok: true, ...r }) + "\n"
        : r.head === null
        ? `nothing to export: thread has no applied records\n`
        : `${r.ref} -> ${r.head} (${r.exported} new commits, ${r.baselines} baselines) in ${r.gitdir}\n`
    )
  },
  inHistory
).pipe(withHelp({
  summary: "Export a thread's history as commits on refs/forkjoin/<thread>",
  description: "Write each applied record of the thread (--thread, default 'cli') as a git commit on refs/forkjoin/<thread> " +
    "(fixed author, the record's commit time, Forkjoin-Record/-Authority/-Provenance/-Exactness trailers). " +
    "Incremental on re-run; only objects and the ref are written, never the worktree or the index."
}))

/**
 * `forkjoin history`: the group of history subcommands.
 *
 * @category constructors
 * @since 0.1.0
 */
export const history = Command.make("history").pipe(
  Command.withDescription(
    "Query the workspace's patch history. Every answer carries coverage (exact / partial / uncertain " +
      "records, gaps, provider aggregates and how many were verified), whether a cap truncated it, and a cursor " +
      "for the next page. A query sees the whole workspace, every thread ('history threads' lists them); with " +
      "--thread ID it answers as that thread and sees it and its registered descendants only. " +
      "History commands read the database as it is; run 'forkjoin repair' first after a crash."
  ),
  Command.withShortDescription("Query the patch history: timeline, threads, turn, diff, file"),
  Command.withSubcommands([timeline, threads, turn, diff, file, ingest, verify, exportGit])
)
