/**
 * `forkjoin apply`: reads an `apply_patch` text, resolves its targets in a workspace, plans
 * the exact result with the pure `@forkjoin/patch` core, and writes it all-or-nothing. The
 * pure parts (record and output rendering) are plain functions; the effectful shell reads
 * and writes through node:fs. Locks, the journal and patch history belong to the engine issue.
 *
 * @since 0.1.0
 */
import { parsePatch, patchTargets, planPatch, type Plan, type PlannedFile, type Profile, type SummaryLine } from "@forkjoin/patch"
import { EngineError, type EngineErrorBody, toBody } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { type ResolvedTarget, resolveTargets } from "./internal/workspace.ts"
import { writePlan } from "./internal/writePlan.ts"

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
  readonly profile: Profile
  /** `codex` only: Codex's opt-in CRLF mode. `native` always preserves line endings. */
  readonly preserveLineEndings: boolean
  readonly threadId?: string | undefined
  readonly turnId?: string | undefined
}

/**
 * A content snapshot on the wire: `sha256:<hex>` and the size in bytes.
 *
 * @category models
 * @since 0.1.0
 */
export interface SnapshotRef {
  readonly hash: string
  readonly bytes: number
}

/**
 * One changed path of an applied patch, as `--json` prints it.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChangeRecord {
  readonly kind: PlannedFile["kind"]
  readonly path: string
  readonly moveFrom?: string
  readonly before: SnapshotRef | null
  readonly after: SnapshotRef | null
  readonly overwritten?: SnapshotRef
}

/**
 * What `apply --json` reports for an applied patch; a preview of SPEC §4.1's
 * `PatchHistoryRecord`, which replaces it once patch history lands.
 *
 * @category models
 * @since 0.1.0
 */
export interface ApplyRecord {
  readonly schemaVersion: 1
  readonly profile: Profile
  readonly threadId?: string
  readonly turnId?: string
  readonly changes: ReadonlyArray<ChangeRecord>
  readonly summary: ReadonlyArray<SummaryLine>
}

/**
 * An applied patch: the plan that was written and its record.
 *
 * @category models
 * @since 0.1.0
 */
export interface ApplyResult {
  readonly plan: Plan
  readonly record: ApplyRecord
}

// -------------------------------------------------------------------------------------
// pure rendering
// -------------------------------------------------------------------------------------

/**
 * Content address of some bytes (`sha256:<hex>`) plus their length.
 *
 * @category constructors
 * @since 0.1.0
 */
export const snapshotOf = (bytes: Uint8Array): SnapshotRef => ({
  hash: `sha256:${createHash("sha256").update(bytes).digest("hex")}`,
  bytes: bytes.length
})

/**
 * Builds the `--json` record of a written plan.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeRecord = (
  plan: Plan,
  request: Pick<ApplyRequest, "profile" | "threadId" | "turnId">
): ApplyRecord => ({
  schemaVersion: 1,
  profile: request.profile,
  ...(request.threadId === undefined ? {} : { threadId: request.threadId }),
  ...(request.turnId === undefined ? {} : { turnId: request.turnId }),
  changes: plan.files.map((file): ChangeRecord => ({
    kind: file.kind,
    path: file.path,
    ...(file.moveFrom === undefined ? {} : { moveFrom: file.moveFrom }),
    before: file.before === undefined ? null : snapshotOf(file.before),
    after: file.after === undefined ? null : snapshotOf(file.after),
    ...(file.overwritten === undefined ? {} : { overwritten: snapshotOf(file.overwritten) })
  })),
  summary: plan.summary
})

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
export const renderJson = (outcome: ApplyResult | EngineError): string =>
  JSON.stringify(
    outcome instanceof EngineError
      ? { ok: false, error: toBody(outcome) }
      : { ok: true, record: outcome.record }
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

const asEngineError = (stage: 3 | 8, paths: ReadonlyArray<string>) => (error: unknown): EngineError =>
  error instanceof EngineError
    ? error
    : new EngineError({
      code: stage === 3 ? "path_invalid" : "commit_failed",
      stage,
      paths,
      message: `Unexpected failure (${errnoOf(error)}); the workspace was not changed.`
    })

/**
 * Applies one patch to a workspace all-or-nothing: parse (stage 2), resolve and read targets
 * (3), plan with the CLI grant write + create-dirs, no overwrite (5), then stage and commit (7–8).
 * A rejection leaves the workspace byte-for-byte as it was.
 *
 * @category constructors
 * @since 0.1.0
 */
export const apply = Effect.fn("Apply.apply")(function*(request: ApplyRequest) {
  const root = yield* resolveWorkspace(request.workspace)
  const parsed = yield* Effect.fromResult(parsePatch(request.patchText, { profile: request.profile }))
  const targetPaths = yield* Effect.fromResult(patchTargets(parsed))
  const targets = yield* Effect.try({
    try: () => resolveTargets(root, targetPaths),
    catch: asEngineError(3, targetPaths)
  })
  const byPath = new Map<string, ResolvedTarget>(targets.map((t) => [t.path, t]))
  const plan = yield* Effect.fromResult(
    planPatch(parsed, new Map(targets.map((t) => [t.path, t.state])), {
      profile: request.profile,
      // The CLI's default grant: `native` refuses to replace existing files; `codex` ignores this.
      allowOverwrite: false,
      preserveLineEndings: request.preserveLineEndings
    })
  )
  yield* Effect.try({
    try: () => writePlan(plan, byPath),
    catch: asEngineError(8, plan.files.map((f) => f.path))
  })
  return { plan, record: makeRecord(plan, request) } satisfies ApplyResult
})
