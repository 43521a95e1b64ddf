/**
 * `forkjoin apply`: reads an `apply_patch` text and hands it to the native engine, which
 * resolves, plans, locks, journals, commits and records it (SPEC §3). This module owns the
 * CLI's request shape, reading the patch, and rendering outcomes; the engine owns writing.
 *
 * @since 0.1.0
 */
import type { Profile } from "@forkjoin/patch"
import { Engine, Grants } from "@forkjoin/engine/Engine"
import { layerSqlite } from "@forkjoin/history/HistoryStoreSqlite"
import { EngineError, type EngineErrorBody, toBody } from "@forkjoin/schema/EngineError"
import { type PatchHistoryRecord, PatchHistoryRecord as RecordSchema } from "@forkjoin/schema/PatchHistoryRecord"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * An invocation problem (unreadable patch file, missing workspace): the CLI exits 2 and the
 * patch was never looked at.
 *
 * @category errors
 * @since 0.1.0
 */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  message: Schema.String
}) {}

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
  readonly threadId?: string | undefined
  readonly turnId?: string | undefined
}

/**
 * A Codex-style summary line (`A` added, `M` modified or moved, `D` deleted).
 *
 * @category models
 * @since 0.1.0
 */
export interface SummaryLine {
  readonly status: "A" | "M" | "D"
  readonly path: string
}

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
 * Codex's success text: `Success. Updated the following files:` then one `A|M|D path` per line.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderSuccess = (summary: ReadonlyArray<SummaryLine>): string =>
  `Success. Updated the following files:\n${summary.map((line) => `${line.status} ${line.path}\n`).join("")}`

/**
 * Human rejection text for stderr: `error[<code>] (stage <n>): <message>` then the paths
 * and any details a model can act on.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderError = (error: EngineErrorBody): string => {
  const lines = [`error[${error.code}] (stage ${error.stage}): ${error.message}`]
  for (const p of error.paths) lines.push(`  path: ${p}`)
  if (error.line !== undefined) lines.push(`  patch line: ${error.line}`)
  if (error.candidates !== undefined && error.candidates.length > 0) {
    lines.push(`  candidate lines: ${error.candidates.join(", ")}`)
  }
  return lines.join("\n") + "\n"
}

/**
 * The single `--json` line for either outcome.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = (outcome: PatchHistoryRecord | EngineError): string =>
  JSON.stringify(
    outcome instanceof EngineError
      ? { ok: false, error: toBody(outcome) }
      : { ok: true, record: Schema.encodeSync(RecordSchema)(outcome) }
  ) + "\n"

// -------------------------------------------------------------------------------------
// effectful shell
// -------------------------------------------------------------------------------------

const errnoOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : String(error)

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
          message: `cannot read patch file '${source}' (${errnoOf(error)}); pass a readable file, or '-' to read stdin.`
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
    catch: (error) => new UsageError({ message: `cannot read the patch from stdin (${errnoOf(error)}).` })
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
        stage: 2,
        paths: [],
        message: "The patch is not valid UTF-8 text; send the patch as UTF-8."
      })
  })

/**
 * The real path of the `--workspace` directory; missing or not a directory is a `UsageError`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolveWorkspace = (workspace: string): Effect.Effect<string, UsageError> =>
  Effect.try({
    try: () => {
      const root = fs.realpathSync(workspace)
      if (!fs.statSync(root).isDirectory()) throw Object.assign(new Error("not a directory"), { code: "ENOTDIR" })
      return root
    },
    catch: (error) =>
      new UsageError({
        message: `workspace '${workspace}' is not a usable directory (${errnoOf(error)}); pass an existing directory to --workspace.`
      })
  })

/**
 * Applies one patch through the engine with the CLI's grant (write + create-dirs, no
 * overwrite) and records it in the workspace's history database. A rejection leaves the
 * workspace byte-for-byte as it was.
 *
 * @category constructors
 * @since 0.1.0
 */
export const apply = Effect.fn("Apply.apply")(function*(request: ApplyRequest) {
  const root = yield* resolveWorkspace(request.workspace)
  const db = request.db ?? path.join(root, ".forkjoin", "history.db")
  const layer = Engine.layer({ root }).pipe(Layer.provide(layerSqlite(db)))
  return yield* Effect.gen(function*() {
    const engine = yield* Engine
    return yield* engine.applyPatch({
      patch: request.patchText,
      profile: request.profile,
      preserveLineEndings: request.preserveLineEndings,
      threadId: request.threadId ?? "cli",
      turnId: request.turnId ?? "cli",
      grant: Grants.writeCreateDirs
    })
  }).pipe(
    Effect.provide(layer),
    Effect.mapError((e) =>
      e instanceof EngineError || e instanceof UsageError
        ? e
        : new EngineError({ code: "commit_failed", stage: 9, paths: [], message: `The history database could not be used: ${String(e)}` })
    )
  )
})

/**
 * `forkjoin repair`: startup repair (SPEC §4.5) run on demand — finishes, undoes or flags
 * every intent a crashed process left open, under the workspace lock.
 *
 * @category constructors
 * @since 0.1.0
 */
export const repair = Effect.fn("Apply.repair")(function*(request: { readonly workspace: string; readonly db?: string | undefined }) {
  const root = yield* resolveWorkspace(request.workspace)
  const db = request.db ?? path.join(root, ".forkjoin", "history.db")
  return yield* Engine.use((engine) => engine.repair).pipe(
    Effect.provide(Engine.layer({ root, repairOnStart: false }).pipe(Layer.provide(layerSqlite(db)))),
    Effect.mapError((e) =>
      e instanceof EngineError
        ? e
        : new EngineError({ code: "commit_failed", stage: 9, paths: [], message: `The history database could not be used: ${String(e)}` })
    )
  )
})

