/**
 * The `forkjoin history` command group (SPEC §9): flag parsing for `timeline`, `turn`,
 * `diff`, `file`, `ingest` and `export-git`, wired to `History.ts`. Exit 0 answered, 1 the
 * history could not answer (refused scope or path, bad cursor, malformed event), 2 usage error.
 *
 * @since 0.1.0
 */
import { Argument, Command, Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as HistoryModule from "./History.ts"
import { type HistoryCommandError, reportFailure, type UsageError } from "./internal/errors.ts"
import { dbFlag, workspaceFlag } from "./internal/flags.ts"
import { writeStdout } from "./internal/output.ts"

// Loaded on demand: the views, provider formats and git export are a large part of the bundle
// and `forkjoin apply` should not pay their start-up.
const loadHistory = Effect.promise(() => import("./History.ts"))

const common = {
  workspace: workspaceFlag(),
  db: dbFlag,
  thread: Flag.String("thread").pipe(
    Flag.withMetavar("ID"),
    Flag.withDescription("The caller's thread (default 'cli'): the query sees it and its registered descendants only"),
    Flag.optional
  ),
  json: Flag.Boolean("json").pipe(
    Flag.withDescription("Print one JSON line: {\"ok\":true,\"view\",\"items\",\"coverage\",\"truncated\",\"nextCursor\",\"caps\"}"),
    Flag.withDefault(false)
  ),
  cursor: Flag.String("cursor").pipe(
    Flag.withMetavar("CURSOR"),
    Flag.withDescription("Continue after a previous page (its nextCursor)"),
    Flag.optional
  ),
  limit: Flag.Int("limit").pipe(
    Flag.withMetavar("N"),
    Flag.withDescription("Items per page (default 100, at most 1000)"),
    Flag.optional
  ),
  maxBytes: Flag.Int("max-bytes").pipe(
    Flag.withMetavar("N"),
    Flag.withDescription("Cap on the response's encoded items in bytes (default 1 MiB, at most 16 MiB)"),
    Flag.optional
  )
}

type Common = {
  readonly workspace: string
  readonly db: Option.Option<string>
  readonly thread: Option.Option<string>
  readonly json: boolean
  readonly cursor: Option.Option<string>
  readonly limit: Option.Option<number>
  readonly maxBytes: Option.Option<number>
}

/** Prints a history command's failure and sets its exit code (1 refused, 2 usage). */
const failWith = (name: string, json: boolean) => <A, R>(effect: Effect.Effect<A, HistoryCommandError | UsageError, R>) =>
  Effect.catch(effect, reportFailure(`history ${name}`, json))

/** Runs a view, prints it, and maps failures to exit codes. */
const runView = (name: string, input: Common, request: HistoryModule.ViewRequest) =>
  Effect.flatMap(loadHistory, (History) => History.view(
    { workspace: input.workspace, db: Option.getOrUndefined(input.db), thread: Option.getOrUndefined(input.thread) },
    {
      cursor: Option.getOrUndefined(input.cursor),
      limit: Option.getOrUndefined(input.limit),
      maxBytes: Option.getOrUndefined(input.maxBytes)
    },
    request
  ).pipe(
    Effect.flatMap((result) => writeStdout(input.json ? History.renderJson(result) : History.renderText(result))),
    failWith(name, input.json)
  ))

const timeline = Command.make(
  "timeline",
  {
    ...common,
    of: Flag.String("of").pipe(
      Flag.withMetavar("THREAD"),
      Flag.withDescription("Whose timeline: the caller's thread (default) or one of its descendants"),
      Flag.optional
    ),
    turn: Flag.String("turn").pipe(
      Flag.withMetavar("ID"),
      Flag.withDescription("A turn's timeline instead of a thread's (records in the caller's scope)"),
      Flag.optional
    ),
    descendants: Flag.Boolean("descendants").pipe(
      Flag.withDescription("Include the thread's descendants' records, interleaved in commit order"),
      Flag.withDefault(false)
    )
  },
  (input) =>
    runView("timeline", input, {
      view: "timeline",
      of: Option.getOrUndefined(input.of),
      turn: Option.getOrUndefined(input.turn),
      descendants: input.descendants
    })
).pipe(Command.withShortDescription("A thread's or turn's records in commit order"))

const turn = Command.make(
  "turn",
  { ...common, turnId: Argument.String("TURN_ID").pipe(Argument.withDescription("The turn to aggregate")) },
  (input) => runView("turn", input, { view: "turn", turn: input.turnId })
).pipe(Command.withShortDescription("A turn's net change per path (moves followed)"))

const diff = Command.make(
  "diff",
  {
    ...common,
    recordId: Argument.String("RECORD_ID").pipe(Argument.withDescription("The record to show")),
    maxLines: Flag.Int("max-lines").pipe(
      Flag.withMetavar("N"),
      Flag.withDescription("Cap on diff lines in the response (default 2000)"),
      Flag.optional
    )
  },
  (input) => runView("diff", input, { view: "diff", recordId: input.recordId, maxLines: Option.getOrUndefined(input.maxLines) })
).pipe(Command.withShortDescription("One record as unified diffs (bounded; binary files summarised)"))

const file = Command.make(
  "file",
  {
    ...common,
    path: Argument.String("PATH").pipe(Argument.withDescription("Workspace-relative path (paths outside the workspace are refused)")),
    noGaps: Flag.Boolean("no-gap-check").pipe(
      Flag.withDescription("Do not compare the file on disk with its last recorded content (no gap recorded)"),
      Flag.withDefault(false)
    )
  },
  (input) => runView("file", input, { view: "file", path: input.path, detectGaps: !input.noGaps })
).pipe(Command.withShortDescription("One file's history across the thread and its descendants, moves followed"))

const { cursor: _c, limit: _l, maxBytes: _m, ...target } = common

const ingest = Command.make(
  "ingest",
  {
    ...target,
    format: Flag.Literals("format", ["codex-turn-diff", "claude-tool-event"]).pipe(
      Flag.withMetavar("codex-turn-diff|claude-tool-event"),
      Flag.withDescription("The event's format: a Codex turn diff (unified diff) or a Claude Edit/Write/MultiEdit tool event (JSON)")
    ),
    file: Argument.String("FILE").pipe(Argument.withDescription("The event file; '-' reads stdin")),
    turn: Flag.String("turn").pipe(Flag.withMetavar("ID"), Flag.withDescription("Turn the event belongs to (default 'cli')"), Flag.optional),
    id: Flag.String("id").pipe(
      Flag.withMetavar("ID"),
      Flag.withDescription("The provider's id for the event (default: derived from its content; re-ingesting is a no-op)"),
      Flag.optional
    ),
    verify: Flag.Boolean("verify").pipe(
      Flag.withDescription("Also verify the claimed change against the workspace (adds a linked verification record)"),
      Flag.withDefault(false)
    )
  },
  (input) =>
    Effect.flatMap(loadHistory, (History) => History.ingest(
      { workspace: input.workspace, db: Option.getOrUndefined(input.db), thread: Option.getOrUndefined(input.thread) },
      {
        format: input.format,
        file: input.file,
        turn: Option.getOrUndefined(input.turn),
        id: Option.getOrUndefined(input.id),
        verify: input.verify
      }
    ).pipe(
      Effect.flatMap((r) =>
        writeStdout(
          input.json
            ? History.renderIngestJson(r)
            : History.renderRecordLine("ingested", r.record) +
              (r.verification === undefined ? "" : History.renderRecordLine("verification", r.verification))
        )
      ),
      failWith("ingest", input.json)
    ))
).pipe(
  Command.withDescription(
    "Record a provider's own account of a change (SPEC §4.6) as a provider aggregate: authority codex_aggregate_event or " +
      "managed_claude_patch_engine, provenance provider_aggregate, exactness partial (uncertain when part of it cannot be " +
      "parsed). A malformed event is refused and nothing is recorded. Exit 0 recorded, 1 refused, 2 usage error."
  ),
  Command.withShortDescription("Ingest a Codex turn diff or a Claude tool event as a provider aggregate")
)

const verify = Command.make(
  "verify",
  { ...target, recordId: Argument.String("RECORD_ID").pipe(Argument.withDescription("The provider aggregate to verify")) },
  (input) =>
    Effect.flatMap(loadHistory, (History) => History.verify(
      { workspace: input.workspace, db: Option.getOrUndefined(input.db), thread: Option.getOrUndefined(input.thread) },
      input.recordId
    ).pipe(
      Effect.flatMap((r) =>
        writeStdout(
          input.json
            ? JSON.stringify({ ok: true, verification: JSON.parse(History.renderIngestJson({ record: r })).record }) + "\n"
            : History.renderRecordLine("verification", r)
        )
      ),
      failWith("verify", input.json)
    ))
).pipe(Command.withShortDescription("Verify a provider aggregate against the workspace (adds a linked record)"))

const exportGit = Command.make(
  "export-git",
  {
    ...target,
    gitDir: Flag.String("git-dir").pipe(
      Flag.withMetavar("DIR"),
      Flag.withDescription("Git directory to write objects and the ref into (default <workspace>/.git, else <workspace>/.forkjoin/git)"),
      Flag.optional
    )
  },
  (input) =>
    Effect.flatMap(loadHistory, (History) => History.exportGit(
      { workspace: input.workspace, db: Option.getOrUndefined(input.db), thread: Option.getOrUndefined(input.thread) },
      Option.getOrUndefined(input.gitDir)
    ).pipe(
      Effect.flatMap((r) =>
        writeStdout(
          input.json
            ? JSON.stringify({ ok: true, ...r }) + "\n"
            : r.head === null
            ? `nothing to export: thread has no applied records\n`
            : `${r.ref} -> ${r.head} (${r.exported} new commits, ${r.baselines} baselines) in ${r.gitdir}\n`
        )
      ),
      failWith("export-git", input.json)
    ))
).pipe(
  Command.withDescription(
    "Write each applied record of the thread (--thread, default 'cli') as a git commit on refs/forkjoin/<thread> " +
      "(fixed author, the record's commit time, Forkjoin-Record/-Authority/-Provenance/-Exactness trailers). " +
      "Incremental on re-run; only objects and the ref are written, never the worktree or the index."
  ),
  Command.withShortDescription("Export a thread's history as commits on refs/forkjoin/<thread>")
)

/**
 * `forkjoin history`: the group of history subcommands.
 *
 * @category constructors
 * @since 0.1.0
 */
export const history = Command.make("history").pipe(
  Command.withDescription(
    "Query the workspace's patch history (SPEC §4.4). Every answer carries coverage (exact / partial / uncertain " +
      "records, gaps, provider aggregates and how many were verified), whether a cap truncated it, and a cursor " +
      "for the next page. A query sees the caller's thread (--thread, default 'cli') and its registered descendants."
  ),
  Command.withShortDescription("Query the patch history: timeline, turn, diff, file"),
  Command.withSubcommands([timeline, turn, diff, file, ingest, verify, exportGit])
)
