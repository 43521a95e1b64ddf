/**
 * The `forkjoin gc` command: flags and help, wired to `Gc.ts` (loaded on demand).
 *
 * @since 0.1.0
 */
import { Command } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { command } from "./internal/command.ts"
import { jsonLineFlag, optionalText, workspaceFlags, workspaceInput } from "./internal/flags.ts"
import { writeStdout } from "./internal/output.ts"

/**
 * `forkjoin gc --workspace DIR [--older-than D] [--prune-snapshots-older-than D] [--db FILE] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const gc = command(
  "gc",
  {
    ...workspaceFlags(),
    olderThan: optionalText("older-than", "D", "Remove only runs finished at least this long ago: a whole number then s, m, h or d, e.g. 30m, 24h, 7d (default 7d)"),
    pruneSnapshotsOlderThan: optionalText("prune-snapshots-older-than", "D",
      "Also drop the stored content of file versions used only by records older than D (off unless given). " +
        "Records, hashes and sizes stay; history views mark such versions pruned. Kept at any age: the latest " +
        "content of every path, what open conflicts and unfinished joins may read"
    ),
    json: jsonLineFlag(
      "{\"ok\":true,\"removed\":[{\"runId\",\"bytes\"}],\"kept\":[{\"runId\",\"reason\"}]}, " +
        "plus \"snapshots\":{\"snapshotsPruned\",\"chunksRemoved\",\"bytesFreed\",\"databaseBytesBefore\",\"databaseBytesAfter\"} with --prune-snapshots-older-than"
    )
  },
  function*(input) {
    const Gc = yield* Effect.promise(() => import("./Gc.ts"))
    const result = yield* Gc.gc({
      ...workspaceInput(input),
      olderThan: Option.getOrUndefined(input.olderThan),
      pruneSnapshotsOlderThan: Option.getOrUndefined(input.pruneSnapshotsOlderThan),
      shortIds: !input.json
    })
    yield* writeStdout(input.json ? Gc.renderJson(result) : Gc.renderText(result))
  }
).pipe(
  Command.withDescription(
    "Remove the artifact folders (.forkjoin/runs/<run-id>/: children's traces, changesets and blobs) of runs that " +
      "are over (applied, partial, failed, or export-only) and older than --older-than. Never removes what a join " +
      "still needs: a run a forkjoin process is running or resuming right now (whatever its age), an interrupted run " +
      "('forkjoin run --resume') or a run with open conflicts ('forkjoin resolve'). " +
      "Merge runs, conflicts and history stay in the database. Reasons a run is kept: live, live_session (an agent " +
      "session that started it is still running), running, blocked, open_conflicts, recent. With --prune-snapshots-older-than D (off by default) it also drops the content of " +
      "file versions only records older than D use, keeping records and hashes, and shrinks the history database. " +
      "Exit 0, 1 on a failure, 2 usage error.\n\n" +
      "Example: forkjoin gc --workspace . --older-than 24h\n" +
      "Example: forkjoin gc --workspace . --prune-snapshots-older-than 30d"
  ),
  Command.withShortDescription("Remove finished runs' artifact folders")
)
