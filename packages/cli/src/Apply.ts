/**
 * `forkjoin apply`: reads an `apply_patch` text and hands it to the native engine, which
 * resolves, plans, locks, journals, commits and records it (SPEC §3). This module owns the
 * CLI's request shape, reading the patch, and rendering the applied record (with the command
 * that undoes it); the engine owns
 * writing, `ApplyCommand.ts` the flags, `internal/errors.ts` what a rejection prints.
 *
 * @since 0.1.0
 */
import { Engine, Grants, type RepairOutcome } from "@forkjoin/engine/Engine"
import { sqliteOptions } from "@forkjoin/history/HistoryStoreSqlite"
import { Sqlite } from "@forkjoin/history/Sqlite"
import type { Profile, SummaryLine } from "@forkjoin/patch/Plan"
import { errnoOf } from "@forkjoin/patch/SystemError"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import { ThreadId, TurnId } from "@forkjoin/schema/Ids"
import {
  type FileChange,
  type PatchHistoryRecord,
  PatchHistoryRecord as RecordSchema
} from "@forkjoin/schema/PatchHistoryRecord"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import { type Palette, plain } from "./internal/colour.ts"
import { HistoryCommandError, UsageError } from "./internal/errors.ts"
import * as ShortIds from "./internal/shortIds.ts"
import { engineLayer, historyDbOf, resolveWorkspace } from "./internal/workspace.ts"
import { announceRepairs, repairsField } from "./Repair.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * One `apply` invocation, after flag parsing.
 *
 * @category models
 * @since 0.1.0
 */
export interface ApplyRequest {
  readonly patchText: string
  /** The `--workspace` directory as given; resolved to its real path. */
  readonly workspace: string
  /** `--db`, default `<workspace>/.forkjoin/history.db`. */
  readonly db?: string | undefined
  readonly profile: Profile
  /** `codex` only: Codex's opt-in CRLF mode. `native` always preserves line endings. */
  readonly preserveLineEndings: boolean
  /**
   * `--allow-overwrite`: the grant with overwrite, so a `native` Add File or Move to may
   * replace an existing file (`codex` always does, as Codex does). Default false.
   */
  readonly allowOverwrite?: boolean | undefined
  readonly threadId?: ThreadId | undefined
  readonly turnId?: TurnId | undefined
  /** `--server URL`: apply through a running `forkjoin serve` with the token in `FORKJOIN_TOKEN`. */
  readonly server?: string | undefined
  /** Text output: read the short ids to show (`--json` shows whole ids and skips it). */
  readonly shortIds?: boolean | undefined
}

/**
 * An applied patch: its record, and what the engine's startup repair did before it (already
 * announced on stderr; empty when nothing was open).
 *
 * @category models
 * @since 0.1.0
 */
export interface ApplyResult {
  readonly record: PatchHistoryRecord
  readonly repairs: ReadonlyArray<RepairOutcome>
  /** The ids for text output (default: whole). */
  readonly ids?: ShortIds.ShortIds | undefined
}

/** The thread and turn recorded when `--thread` / `--turn` are not given. */
const cliThread = ThreadId.make("cli")
const cliTurn = TurnId.make("cli")

// -------------------------------------------------------------------------------------
// pure rendering
// -------------------------------------------------------------------------------------

/**
 * The Codex summary of a record: adds, then modifications (moves list the destination), then deletes.
 *
 * @category combinators
 * @since 0.1.0
 */
export const summaryOf = (record: PatchHistoryRecord): ReadonlyArray<SummaryLine> => {
  const lines = record.changes.map((c): SummaryLine => ({
    status: c.kind === "add" || c.kind === "replace" ? "A" : c.kind === "delete" ? "D" : "M",
    path: c.path
  }))
  return [..."AMD"].flatMap((s) => lines.filter((l) => l.status === s))
}

/**
 * Codex's success text: `Success. Updated the following files:` then one `A|M|D path` per line
 * (with a colour `palette`, the letters green, yellow and red).
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderSuccess = (summary: ReadonlyArray<SummaryLine>, palette: Palette = plain): string =>
  `Success. Updated the following files:\n${
    summary.map((line) => `${statusColour(palette, line.status)(line.status)} ${line.path}\n`).join("")
  }`

const statusColour = (palette: Palette, status: SummaryLine["status"]) =>
  status === "A" ? palette.green : status === "D" ? palette.red : palette.yellow

/**
 * True when the change replaced a file that existed before it: an Add File onto a file (a
 * `replace`) or an add or move whose destination held a file (`overwritten`).
 *
 * @category guards
 * @since 0.1.0
 */
export const replacedExistingFile = (change: FileChange): boolean =>
  change.kind === "replace" || change.overwritten !== undefined

/**
 * One `note:` line per file the record replaced (see `replacedExistingFile`), printed after
 * the Codex summary so its `A|M|D path` lines stay as Codex prints them.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderReplaced = (record: PatchHistoryRecord): string =>
  record.changes.filter(replacedExistingFile).map((c) =>
    `note: ${c.path} replaced an existing file (${
      c.kind === "move" && c.moveFrom !== undefined ? `moved from ${c.moveFrom}; ` : ""
    }its previous content is in the patch history)\n`
  ).join("")

/**
 * The line that says how to undo the record's transaction: `undo: forkjoin rollback <id>`, the
 * id shortened as the rest of the text output shows it.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderUndo = (result: ApplyResult): string =>
  `undo: forkjoin rollback ${(result.ids ?? ShortIds.fullIds).short(result.record.transactionId)}\n`

/**
 * The `--json` line of an applied patch: `{"ok":true,"record":{...}}`, plus `"repairs":[...]`
 * when the startup repair did something (a rejection's line is rendered with every other
 * failure, in `internal/errors.ts`).
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = (result: ApplyResult): string =>
  JSON.stringify({ ok: true, record: Schema.encodeSync(RecordSchema)(result.record), ...repairsField(result.repairs) }) + "\n"

// -------------------------------------------------------------------------------------
// effectful shell
// -------------------------------------------------------------------------------------

const codeOf = (error: unknown): string => errnoOf(error) ?? String(error)

/**
 * Reads the patch from a file, or from stdin when `source` is `-` or absent. An unreadable
 * file, or no patch at all on an interactive terminal, is a `UsageError`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const readPatchText = (source: string | undefined): Effect.Effect<Uint8Array, UsageError> => {
  if (source !== undefined && source !== "-") {
    return Effect.try({
      try: () => fs.readFileSync(source) as Uint8Array,
      catch: (error) =>
        new UsageError({
          message: `cannot read patch file '${source}' (${codeOf(error)}); pass a readable file, or '-' to read stdin.`,
          cause: error
        })
    })
  }
  // Waiting on a terminal for a patch nobody is typing looks like a hang; an explicit '-' opts in.
  if (source === undefined && process.stdin.isTTY === true) {
    return Effect.fail(
      new UsageError({ message: "no patch given: pass PATCH_FILE, or pipe the patch on stdin ('-')." })
    )
  }
  return Effect.tryPromise({
    try: async () => {
      const chunks: Array<Uint8Array> = []
      for await (const chunk of process.stdin) chunks.push(chunk as Uint8Array)
      return Buffer.concat(chunks) as Uint8Array
    },
    catch: (error) => new UsageError({ message: `cannot read the patch from stdin (${codeOf(error)}).`, cause: error })
  })
}

/**
 * Decodes patch bytes as UTF-8 (a leading BOM is dropped); other encodings are `patch_syntax`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const decodePatch = (bytes: Uint8Array): Effect.Effect<string, EngineError> =>
  Effect.try({
    try: () => new TextDecoder("utf-8", { fatal: true }).decode(bytes),
    catch: () =>
      new EngineError({
        code: "patch_syntax",
        stage: Stage.parse,
        paths: [],
        message: "The patch is not valid UTF-8 text; send the patch as UTF-8."
      })
  })

/**
 * Applies one patch through the engine with the CLI's grant (write + create-dirs, plus
 * overwrite with `allowOverwrite`) and records it in the workspace's history database. A
 * rejection leaves the workspace byte-for-byte as it was. Resolves to the record and what the
 * startup repair did first.
 *
 * @category constructors
 * @since 0.1.0
 */
export const apply = Effect.fn("Apply.apply")(function*(request: ApplyRequest) {
  if (request.server !== undefined) return yield* applyThroughServer(request, request.server)
  const root = yield* resolveWorkspace(request.workspace)
  return yield* Effect.gen(function*() {
    const engine = yield* Engine
    // What the startup repair did is said on stderr first (issue 9): never silently.
    const repairs = yield* announceRepairs(root, request.db)
    const record = yield* engine.applyPatch({
      patch: request.patchText,
      profile: request.profile,
      preserveLineEndings: request.preserveLineEndings,
      threadId: request.threadId ?? cliThread,
      turnId: request.turnId ?? cliTurn,
      grant: request.allowOverwrite === true ? Grants.full : Grants.writeCreateDirs
    })
    if (request.shortIds !== true) return { record, repairs } satisfies ApplyResult
    // Only the ids near this one are read: a long history costs apply nothing here.
    const ids = yield* ShortIds.loadAround(engine.environmentId, record.transactionId).pipe(
      Effect.provide(Sqlite.layer(historyDbOf(root, request.db), sqliteOptions())),
      Effect.orElseSucceed(() => ShortIds.fullIds)
    )
    return { record, repairs, ids } satisfies ApplyResult
  }).pipe(Effect.provide(engineLayer(root, historyDbOf(root, request.db))))
})

/** `--server URL`: one HTTP round trip to the gateway, which applies with its resident engine. */
const applyThroughServer = (request: ApplyRequest, server: string) =>
  Effect.gen(function*() {
    const token = process.env["FORKJOIN_TOKEN"] ?? ""
    if (token === "") {
      return yield* new UsageError({ message: "--server needs a token in FORKJOIN_TOKEN; create one with 'forkjoin token create --thread T --workspace DIR'." })
    }
    const Remote = yield* Effect.promise(() => import("@forkjoin/engine/Remote"))
    const record = yield* Remote.applyRemote({ url: server, token }, {
      patch: request.patchText,
      thread: request.threadId,
      turn: request.turnId ?? cliTurn,
      profile: request.profile,
      allowOverwrite: request.allowOverwrite
    }).pipe(
      Effect.mapError((e) =>
        e instanceof EngineError
          ? e
          : e.status === 0 || e.status === 401 || e.status === 404
          ? new UsageError({ message: `--server ${server}: ${e.message}`, cause: e })
          : new HistoryCommandError({ code: "gateway_failed", message: `--server ${server}: ${e.message}`, cause: e })
      )
    )
    return { record, repairs: [] } satisfies ApplyResult
  })

/**
 * The whole `apply` command: reads the patch from `source` (a file, or stdin for `-` or
 * nothing), decodes it and applies it as `request` says.
 *
 * @category constructors
 * @since 0.1.0
 */
export const applyFrom = Effect.fn("Apply.applyFrom")(function*(
  source: string | undefined,
  request: Omit<ApplyRequest, "patchText">
) {
  const patchText = yield* Effect.flatMap(readPatchText(source), decodePatch)
  return yield* apply({ ...request, patchText })
})
