/**
 * `forkjoin history ...`: the history views (timeline, turn, diff, file) of a workspace's
 * patch history, provider aggregates (ingest, verify) and the git export. This module owns
 * the request shapes after flag parsing, opening the workspace's database, and rendering
 * results for humans and as JSON; the views themselves live in `@forkjoin/history/Views`,
 * the flags in `HistoryCommand.ts`, what a failure prints in `internal/errors.ts`.
 *
 * @since 0.1.0
 */
import { environmentIdOf } from "@forkjoin/engine/Engine"
import { sqliteOptions } from "@forkjoin/history/HistoryStoreSqlite"
import { Sqlite } from "@forkjoin/history/Sqlite"
import { ProviderAggregates, type ProviderFormat } from "@forkjoin/history/ProviderAggregates"
import { HistoryViews } from "@forkjoin/history/Views"
import { PatchHistoryRecord } from "@forkjoin/schema/PatchHistoryRecord"
import {
  DiffPage,
  FilePage,
  type RecordDiffFile,
  TimelinePage,
  TurnPage
} from "@forkjoin/schema/HistoryViews"
import { ordinalOf } from "@forkjoin/history/ViewRequests"
import { ThreadsPage } from "@forkjoin/schema/WorkspaceIndex"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import { replacedExistingFile } from "./Apply.ts"
import { HistoryCommandError, toHistoryCommandError, UsageError } from "./internal/errors.ts"
import { mergedNote } from "./internal/mergeNote.ts"
import * as ShortIds from "./internal/shortIds.ts"
import { ensureStateFolder, historyDbOf, resolveWorkspace } from "./internal/workspace.ts"
import { readAgentSessions, readRuns, type ThreadOrigin, threadOrigins } from "./internal/workspaceIndex.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * Flags every history command shares.
 *
 * @category models
 * @since 0.1.0
 */
export interface HistoryTarget {
  readonly workspace: string
  readonly db?: string | undefined
  /**
   * The caller's thread (default `cli`, as `forkjoin apply` records). Without it the views
   * show the workspace's whole history, every thread: the local user owns all of it.
   */
  readonly thread?: string | undefined
}

/**
 * Paging flags.
 *
 * @category models
 * @since 0.1.0
 */
export interface Paging {
  readonly cursor?: string | undefined
  readonly limit?: number | undefined
  readonly maxBytes?: number | undefined
}

/**
 * One view request after flag parsing.
 *
 * @category models
 * @since 0.1.0
 */
export type ViewRequest =
  | { readonly view: "timeline"; readonly of?: string | undefined; readonly turn?: string | undefined; readonly descendants: boolean }
  | { readonly view: "turn"; readonly turn: string }
  | { readonly view: "diff"; readonly target: string; readonly maxLines?: number | undefined }
  | { readonly view: "file"; readonly path: string; readonly detectGaps: boolean }
  | { readonly view: "threads" }

/**
 * A page of any view, tagged with the view's name.
 *
 * @category models
 * @since 0.1.0
 */
export type ViewResult =
  | { readonly view: "timeline"; readonly page: TimelinePage }
  | { readonly view: "turn"; readonly page: TurnPage }
  | { readonly view: "diff"; readonly page: DiffPage }
  | { readonly view: "file"; readonly page: FilePage }
  | { readonly view: "threads"; readonly page: ThreadsPage }

/**
 * A page with, when it is an empty first page of a timeline, where the records are instead.
 *
 * @category models
 * @since 0.1.0
 */
export type ViewAnswer = ViewResult & {
  readonly hint?: string | undefined
  /** For the threads view: which run (and child, and agent session) made each thread. */
  readonly origins?: ReadonlyMap<string, ThreadOrigin> | undefined
  /** The ids for text output (default: whole). */
  readonly ids?: ShortIds.ShortIds | undefined
}

// -------------------------------------------------------------------------------------
// effectful shell
// -------------------------------------------------------------------------------------

/**
 * The workspace's real root, its database file (which must exist: views never create one)
 * and its environment id.
 *
 * @category constructors
 * @since 0.1.0
 */
export const openTarget = (target: HistoryTarget, options?: { readonly create?: boolean }) =>
  Effect.gen(function*() {
    const root = yield* resolveWorkspace(target.workspace)
    const db = historyDbOf(root, target.db)
    // A command that may create the database checks the state folder first (never through a link).
    if (options?.create === true && target.db === undefined) {
      yield* ensureStateFolder(root).pipe(Effect.mapError((e) => new HistoryCommandError({ code: e.code, message: e.message, cause: e })))
    }
    if (options?.create !== true && !fs.existsSync(db)) {
      return yield* new HistoryCommandError({
        code: "no_history",
        message: `no patch history at ${db}: no records yet (forkjoin apply, run and agent write them), ` +
          "or pass --db FILE"
      })
    }
    return { root, db, environmentId: environmentIdOf(root), caller: target.thread ?? "cli", everyThread: target.thread === undefined }
  })

/**
 * Runs one view against the workspace's history (a diff's record or transaction id whole or
 * shortened); with `text`, also reads the short ids to show.
 *
 * @category constructors
 * @since 0.1.0
 */
export const view = Effect.fn("History.view")(function*(target: HistoryTarget, paging: Paging, request: ViewRequest, text = false) {
  const t = yield* openTarget(target)
  const answer = yield* answerView(t, paging, request)
  if (!text) return answer
  const ids = yield* ShortIds.loadForDisplay(t.environmentId).pipe(
    Effect.provide(Sqlite.layer(t.db, sqliteOptions())),
    Effect.orElseSucceed(() => ShortIds.fullIds)
  )
  return { ...answer, ids }
})

/** The named record or transaction of a diff target: `#N` as it is, else the id it is or shortens. */
const diffTarget = (environmentId: Parameters<typeof ShortIds.load>[0], target: string) =>
  ordinalOf(target) !== undefined ? Effect.succeed(target) : Effect.gen(function*() {
    const ids = yield* ShortIds.load(environmentId).pipe(Effect.mapError(toHistoryCommandError("read")))
    const record = yield* ShortIds.expand(ids, "record", target, "RECORD")
    return record !== target ? record : yield* ShortIds.expand(ids, "transaction", target, "RECORD")
  })

const answerView = (t: Effect.Success<ReturnType<typeof openTarget>>, paging: Paging, request: ViewRequest) => {
  const base = { caller: t.caller, everyThread: t.everyThread, cursor: paging.cursor, limit: paging.limit, maxBytes: paging.maxBytes }
  return Effect.gen(function*() {
    const views = yield* HistoryViews
    switch (request.view) {
      case "timeline": {
        const of = request.of === undefined ? undefined : yield* ShortIds.expandIn(t.environmentId, "thread", request.of, "--of")
        const page = yield* views.timeline({ ...base, thread: of, turn: request.turn, descendants: request.descendants })
        if (page.items.length > 0 || paging.cursor !== undefined) return { view: "timeline", page } as const
        // An empty answer says where the records are, so nobody is left with "0 records".
        const everywhere = yield* views.threads({ caller: t.caller, everyThread: true, limit: 1000 })
        const withRecords = everywhere.items.filter((i) => i.records > 0).map((i) => i.threadId)
        const asked = request.turn !== undefined ? `turn ${request.turn}` : t.everyThread && request.of === undefined ? undefined : `thread ${request.of ?? t.caller}`
        return { view: "timeline", page, hint: emptyHint(asked, withRecords) } as const
      }
      case "threads": {
        const page = yield* views.threads(base)
        const origins = threadOrigins(yield* readRuns(t.db, t.environmentId), yield* readAgentSessions(t.root))
        return { view: "threads", page, origins } as const
      }
      case "turn":
        return { view: "turn", page: yield* views.turn({ ...base, turn: request.turn }) } as const
      case "diff": {
        const target = yield* diffTarget(t.environmentId, request.target)
        return { view: "diff", page: yield* views.diff({ ...base, target, maxLines: request.maxLines }) } as const
      }
      case "file":
        return {
          view: "file",
          page: yield* views.file({ ...base, path: request.path, detectGaps: request.detectGaps })
        } as const
    }
  }).pipe(
    Effect.provide(HistoryViews.layerWithStore(t.db, { environmentId: t.environmentId, root: t.root })),
    Effect.mapError(toHistoryCommandError("read"))
  )
}

// -------------------------------------------------------------------------------------
// rendering
// -------------------------------------------------------------------------------------

/**
 * What an empty timeline says: that this workspace has no records yet and what writes them,
 * or that `asked` (a thread or turn) has none and which threads have some.
 *
 * @category combinators
 * @since 0.1.0
 */
export const emptyHint = (asked: string | undefined, threadsWithRecords: ReadonlyArray<string>): string =>
  threadsWithRecords.length === 0
    ? "no records yet: forkjoin apply, forkjoin run and forkjoin agent write them"
    : `no records in ${asked ?? "this view"}; this workspace has records in thread${threadsWithRecords.length === 1 ? "" : "s"} ` +
      `${threadsWithRecords.slice(0, 10).join(", ")}${threadsWithRecords.length > 10 ? `, … and ${threadsWithRecords.length - 10} more` : ""}` +
      " — run 'forkjoin history threads'"

const PAGE_SCHEMAS = { timeline: TimelinePage, turn: TurnPage, diff: DiffPage, file: FilePage, threads: ThreadsPage } as const

/**
 * The `--json` line of a page: `{"ok":true,"view":...,"items":[...],"coverage":{...},
 * "truncated":...,"nextCursor":...,"caps":{...}}`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = (result: ViewAnswer): string =>
  JSON.stringify({
    ok: true,
    view: result.view,
    ...(Schema.encodeSync(PAGE_SCHEMAS[result.view] as Schema.Codec<unknown, object>)(result.page)),
    ...(result.hint === undefined ? {} : { hint: result.hint }),
    ...(result.origins === undefined ? {} : { origins: Object.fromEntries(result.origins) })
  }) + "\n"

const letter = (kind: string) => (kind === "add" ? "A" : kind === "delete" ? "D" : kind === "move" ? "R" : "M")

/** How many of a record's changes a timeline line lists before "… and N more". */
const CHANGES_PER_LINE = 10

/** A record's changes on one line, the first `CHANGES_PER_LINE` of them ('history diff' shows all). */
const changeList = (changes: PatchHistoryRecord["changes"]): string => {
  const shown = changes.slice(0, CHANGES_PER_LINE)
    .map((c) => `${letter(c.kind)} ${c.moveFrom === undefined ? "" : `${c.moveFrom} -> `}${c.path}`)
    .join(", ")
  return changes.length > CHANGES_PER_LINE ? `${shown}, … and ${changes.length - CHANGES_PER_LINE} more` : shown
}

/**
 * Coverage, caps and the next cursor. A timeline's or a file's coverage counts the records on
 * its page only (`ofPage`), so the line says so; a turn's and a diff's count all their records.
 */
const footer = (
  page: { coverage: TimelinePage["coverage"]; truncated: boolean; nextCursor: string | null; caps: TimelinePage["caps"] },
  ofPage = false
) => {
  const c = page.coverage
  const lines = [
    `coverage${ofPage ? " (this page)" : ""}: ${c.records} records — ${c.exact} exact, ${c.partial} partial, ${c.uncertain} uncertain; ` +
    `${c.gaps} gaps; ${c.providerAggregates} provider aggregates (${c.verifiedAggregates} verified)`
  ]
  for (const u of c.unrecordedChanges ?? []) {
    const what = u.diskHash === null ? "deleted" : u.recordedHash === null ? "created" : "edited"
    lines.push(`unrecorded: ${u.path} was ${what} outside forkjoin since its last record; the next write or merge of it records the gap`)
  }
  if (page.caps.limitClamped) lines.push(`limit clamped to ${page.caps.limit}`)
  if (page.truncated) lines.push(`truncated: a cap was applied (max ${page.caps.maxBytes} bytes${page.caps.maxDiffLines === undefined ? "" : `, ${page.caps.maxDiffLines} diff lines`})`)
  if (page.nextCursor !== null) lines.push(`more: --cursor ${page.nextCursor}`)
  return lines.join("\n") + "\n"
}

const REPLACED = "replaced an existing file"

// An add or move onto an existing file carries the file it replaced; a replace substitutes an
// existing file whole. A gap's replace is an edit made outside forkjoin, not a replacement, so
// gaps get no note.
const replacedInDiff = (f: RecordDiffFile): boolean => f.kind === "replace" || f.overwritten !== undefined

const describeDiffFile = (gaps: boolean) => (f: RecordDiffFile): string => {
  const replacedFile = !gaps && replacedInDiff(f)
  if (f.source === "unavailable") {
    return `${letter(f.kind)} ${f.path}: content not recorded (no blobs, no provider event)${replacedFile ? `; ${REPLACED}` : ""}\n`
  }
  const replaced = replacedFile ? `# ${f.path} ${REPLACED}\n` : ""
  const merged = f.merge === undefined ? "" : `# ${f.path} ${mergedNote(f.merge)}\n`
  const note = f.source === "provider_event" ? `# as described by the provider (not verified content)\n` : ""
  return `${replaced}${merged}${note}${f.diff}${f.truncated ? "# … diff truncated (cap reached)\n" : ""}`
}

/**
 * Human text of a page: one line per item (ids shortened), then coverage, caps and the next cursor.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderText = (result: ViewAnswer): string => {
  const ids = result.ids ?? ShortIds.fullIds
  switch (result.view) {
    case "timeline":
      return (result.hint === undefined ? "" : `${result.hint}\n`) + result.page.items.map((r) =>
        `#${r.commitOrdinal} ${r.committedAt} ${ids.short(r.threadId)}/${r.turnId} ${ids.short(r.transactionId)} ${r.exactness} ${r.outcome}` +
        ` [${r.provenance}]: ${changeList(r.changes)}\n`
      ).join("") + footer(result.page, true)
    case "turn":
      return result.page.items.map((i) =>
        `${letter(i.kind)} ${i.moveFrom === undefined ? "" : `${i.moveFrom} -> `}${i.path} (${i.exactness}, ${i.records.length} records)\n`
      ).join("") + footer(result.page)
    case "diff":
      return result.page.items.map(describeDiffFile(result.page.coverage.gaps > 0)).join("") + footer(result.page)
    case "file":
      return result.page.items.map((i) =>
        `#${i.commitOrdinal} ${i.committedAt} ${ids.short(i.threadId)}/${i.turnId} ${ids.short(i.recordId)} ${letter(i.change.kind)} ` +
        `${i.change.moveFrom === undefined ? "" : `${i.change.moveFrom} -> `}${i.change.path} ${i.exactness} ${i.outcome} [${i.provenance}]` +
        `${i.outcome !== "gap" && replacedExistingFile(i.change) ? ` (${REPLACED})` : ""}\n`
      ).join("") + footer(result.page, true)
    case "threads":
      return threadsText(result.page, result.origins ?? new Map(), ids)
  }
}

const originText = (o: ThreadOrigin | undefined, ids: ShortIds.ShortIds): string =>
  o === undefined
    ? ""
    : `  made by run ${ids.short(o.runId)}${o.childId === undefined ? "" : ` (child ${o.childId})`}${o.agentId === undefined ? "" : `, started by agent ${o.agentId}`}`

/** One line per thread: id, parent, records, first and last record time, and who made it. */
const threadsText = (page: ThreadsPage, origins: ReadonlyMap<string, ThreadOrigin>, ids: ShortIds.ShortIds): string => {
  if (page.items.length === 0) return "no threads yet: forkjoin apply, forkjoin run and forkjoin agent write records\n"
  const lines = page.items.map((t) =>
    `${ids.short(t.threadId)}  parent ${t.parentThreadId === null ? "-" : ids.short(t.parentThreadId)}  ${t.records} record(s)` +
    `${t.firstRecordAt === null ? "" : `  ${t.firstRecordAt} .. ${t.lastRecordAt}`}${originText(origins.get(t.threadId), ids)}`
  )
  if (page.truncated) lines.push(`truncated: a cap was applied (max ${page.caps.maxBytes} bytes)`)
  if (page.nextCursor !== null) lines.push(`more: --cursor ${page.nextCursor}`)
  lines.push("a thread's records: forkjoin history timeline --of THREAD")
  return lines.join("\n") + "\n"
}

// -------------------------------------------------------------------------------------
// provider aggregates
// -------------------------------------------------------------------------------------

/**
 * One `history ingest` invocation: the event file (`-` for stdin) and its format, the
 * thread and turn it belongs to, an optional provider id, and whether to verify at once.
 *
 * @category models
 * @since 0.1.0
 */
export interface IngestCommand {
  readonly format: ProviderFormat
  readonly file: string
  readonly turn?: string | undefined
  readonly id?: string | undefined
  readonly verify: boolean
}

const readEvent = (file: string): Effect.Effect<string, UsageError> =>
  Effect.try({
    try: () => fs.readFileSync(file === "-" ? 0 : file, "utf8"),
    catch: (e) =>
      new UsageError({
        message: `cannot read event file '${file}' (${e instanceof Error ? e.message : String(e)}); pass a readable file or '-'`,
        cause: e
      })
  })

/**
 * Ingests one provider event (and verifies it against the workspace with `verify`);
 * `alreadyRecorded` says the same event was ingested before and nothing new was recorded.
 *
 * @category constructors
 * @since 0.1.0
 */
export const ingest = Effect.fn("History.ingest")(function*(target: HistoryTarget, command: IngestCommand) {
  const text = yield* readEvent(command.file)
  const t = yield* openTarget(target, { create: true })
  return yield* Effect.gen(function*() {
    const pa = yield* ProviderAggregates
    const { alreadyRecorded, record } = yield* pa.ingestWithStatus({
      format: command.format,
      text,
      threadId: t.caller,
      turnId: command.turn ?? "cli",
      id: command.id
    })
    const verification = command.verify ? yield* pa.verify(record.recordId) : undefined
    return { record, alreadyRecorded, verification }
  }).pipe(
    Effect.provide(ProviderAggregates.layerSqlite(t.db, { environmentId: t.environmentId, root: t.root })),
    Effect.mapError(toHistoryCommandError("used"))
  )
})

/**
 * Verifies an ingested aggregate against the workspace; returns the verification record.
 *
 * @category constructors
 * @since 0.1.0
 */
export const verify = Effect.fn("History.verify")(function*(target: HistoryTarget, recordId: string) {
  const t = yield* openTarget(target)
  return yield* Effect.flatMap(ProviderAggregates, (pa) => pa.verify(recordId)).pipe(
    Effect.provide(ProviderAggregates.layerSqlite(t.db, { environmentId: t.environmentId, root: t.root })),
    Effect.mapError(toHistoryCommandError("used"))
  )
})

const encodeRecord = Schema.encodeSync(PatchHistoryRecord)

/**
 * The failure a verification record reports when the workspace did not match the claim
 * (`verification_mismatch` warnings): the command prints the record, then exits 1.
 * `undefined` when every claimed change held.
 *
 * @category error handling
 * @since 0.1.0
 */
export const verificationFailure = (verification: PatchHistoryRecord): HistoryCommandError | undefined => {
  const misses = verification.warnings.filter((w) => w.code === "verification_mismatch").length
  return misses === 0 ? undefined : new HistoryCommandError({
    code: "verification_mismatch",
    message: `the workspace does not match ${misses} claimed change${misses === 1 ? "" : "s"} of ${
      verification.links.verifies ?? "the aggregate"
    }; verification record ${verification.recordId} lists them`
  })
}

/** `ok` and, for a mismatch, the error of a line that carries a verification record. */
const verdictOf = (verification: PatchHistoryRecord | undefined) => {
  const failure = verification === undefined ? undefined : verificationFailure(verification)
  return failure === undefined ? { ok: true } : { ok: false, error: { code: failure.code, message: failure.message } }
}

/**
 * The `--json` line of `history verify`: `{"ok":true,"verification":{...}}`, or with a
 * mismatch `{"ok":false,"error":{"code":"verification_mismatch","message"},"verification":{...}}`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderVerifyJson = (verification: PatchHistoryRecord): string =>
  JSON.stringify({ ...verdictOf(verification), verification: encodeRecord(verification) }) + "\n"

/**
 * The `--json` line of an ingestion: `{"ok":true,"record":{...},"alreadyRecorded":false,
 * "verification":{...}?}` (`alreadyRecorded` when known); a verification mismatch makes it
 * `"ok":false` with `"error":{"code":"verification_mismatch","message"}`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderIngestJson = (r: {
  readonly record: PatchHistoryRecord
  readonly alreadyRecorded?: boolean | undefined
  readonly verification?: PatchHistoryRecord | undefined
}) =>
  JSON.stringify({
    ...verdictOf(r.verification),
    record: encodeRecord(r.record),
    ...(r.alreadyRecorded === undefined ? {} : { alreadyRecorded: r.alreadyRecorded }),
    ...(r.verification === undefined ? {} : { verification: encodeRecord(r.verification) })
  }) + "\n"

/**
 * Human text of an ingested or verification record.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderRecordLine = (label: string, r: PatchHistoryRecord): string =>
  `${label} ${r.recordId} (${r.authority}, ${r.exactness}, ${r.transactionId}): ` +
  `${r.changes.map((c) => `${letter(c.kind)} ${c.moveFrom === undefined ? "" : `${c.moveFrom} -> `}${c.path}`).join(", ")}\n` +
  r.warnings.map((w) => `  warning[${w.code}]: ${w.message}\n`).join("")

// -------------------------------------------------------------------------------------
// git export
// -------------------------------------------------------------------------------------

/** The workspace's state folder, refused (a link, a file) with the engine's code and message. */
const stateFolderOf = (root: string): Effect.Effect<string, HistoryCommandError> =>
  ensureStateFolder(root).pipe(Effect.mapError((e) => new HistoryCommandError({ code: e.code, message: e.message, cause: e })))

/**
 * Exports the caller's thread (`--thread`) to `refs/forkjoin/<thread>` in `gitDir`
 * (default: the workspace's `.git` directory when it has one, else a bare repository at
 * `<workspace>/.forkjoin/git`, after the state-folder check). A `gitDir` that is neither a
 * git directory nor missing or empty is refused (`git_export_failed`), nothing written.
 *
 * @category constructors
 * @since 0.1.0
 */
export const exportGit = Effect.fn("History.exportGit")(function*(target: HistoryTarget, gitDir: string | undefined) {
  const t = yield* openTarget(target)
  const dotGit = path.join(t.root, ".git")
  const gitdir = gitDir !== undefined
    ? path.resolve(gitDir)
    : fs.existsSync(path.join(dotGit, "HEAD"))
    ? dotGit
    : path.join(yield* stateFolderOf(t.root), "git")
  // Loaded on demand: isomorphic-git is a third of the bundle and only this command needs it.
  const { exportThread } = yield* Effect.promise(() => import("@forkjoin/history/GitExport"))
  const result = yield* exportThread({ environmentId: t.environmentId, threadId: t.caller, gitdir }).pipe(
    Effect.provide(Sqlite.layer(t.db, sqliteOptions())),
    Effect.mapError(toHistoryCommandError("read"))
  )
  return { ...result, gitdir }
})
