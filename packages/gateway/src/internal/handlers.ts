/**
 * The `/v1/` handlers: each checks the caller's scope first (404 for anything it may not see),
 * then calls the engine, the views, the orchestrator or ingestion, and maps failures through
 * `toApiError`. Authentication is the `Authorization` middleware's (`Gateway.ts`).
 */
import { Engine, Grants as EngineGrants } from "@forkjoin/engine/Engine"
import { MergeStore } from "@forkjoin/history/MergeStore"
import { ProviderAggregates } from "@forkjoin/history/ProviderAggregates"
import { HistoryViews } from "@forkjoin/history/Views"
import * as AgentSessions from "@forkjoin/orchestrator/AgentSessions"
import * as Conflicts from "@forkjoin/orchestrator/Conflicts"
import * as Rollback from "@forkjoin/orchestrator/Rollback"
import * as Visibility from "@forkjoin/orchestrator/Visibility"
import type { ConflictRecord } from "@forkjoin/schema/Conflict"
import type { ApplyRequest } from "@forkjoin/schema/Gateway"
import { InvocationId, type ThreadId } from "@forkjoin/schema/Ids"
import type { MergeRun } from "@forkjoin/schema/MergeRun"
import type { AgentSessionDetail } from "@forkjoin/schema/WorkspaceIndex"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as path from "node:path"
import { HttpApiBuilder } from "effect/http-api"
import { BadRequest, Caller, type ClusterRunners, GatewayApi, NotFound, Rejected } from "../GatewayApi.ts"
import { checkPath, type Grants } from "../ViewGrants.ts"
import { requireSees, sees, toApiError } from "./access.ts"
import { eventStream } from "./routes.ts"
import { openCursor, scopedFilePage, scopedRecord, scopedRecordPage, scopedTarget, sealedPage } from "./scoped.ts"

const childThreadOf = Visibility.conflictThread

const num = (s: number | undefined) => (s === undefined ? {} : { limit: s })

/** The runs `caller` sees, newest first. */
const visibleRuns = (caller: string) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const store = yield* MergeStore
    const runs = yield* store.listRuns({ environmentId: engine.environmentId }).pipe(Effect.mapError(toApiError))
    return yield* Effect.filter(runs, (run: MergeRun) => sees(caller, run.threadId))
  })

/**
 * The agent sessions `caller` sees (it sees the session's thread; a session whose thread is not
 * recorded is nobody's through the gateway), oldest first, each file named relative to the
 * workspace.
 */
const visibleSessions = (caller: string) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const all = yield* AgentSessions.readAll(engine.root)
    const seen = yield* Effect.filter(all, (d: AgentSessionDetail) => d.session.threadId === null ? Effect.succeed(false) : sees(caller, d.session.threadId))
    return seen.map((d) => ({ ...d, session: { ...d.session, transcript: path.relative(engine.root, d.session.transcript) } }))
  })

/**
 * `POST /v1/apply` for `caller`: the thread rule (the payload's thread must be one the caller
 * sees, 404 otherwise), then the engine. Shared by the router's handler and the fast path
 * (`fastApply.ts`), so the two cannot drift.
 */
export const applyAs = (caller: ThreadId, payload: ApplyRequest) =>
  Effect.gen(function*() {
    const thread = payload.thread ?? caller
    yield* requireSees(caller, thread, `thread ${thread}`)
    const engine = yield* Engine
    return yield* engine.applyPatch({
      patch: payload.patch,
      threadId: thread,
      turnId: payload.turn,
      ...(payload.invocation === undefined ? {} : { invocationId: InvocationId.make(payload.invocation) }),
      profile: payload.profile ?? "native",
      grant: payload.allowOverwrite === true ? EngineGrants.full : EngineGrants.writeCreateDirs
    }).pipe(Effect.mapError(toApiError), Effect.flatMap((record) => scopedRecord(caller, record)))
  })

/**
 * The handlers of the `v1` group. `baseUrl` gives the server's own URL (known once bound), for
 * view-grant URLs; `pollMs` is the event stream's poll interval.
 */
export const v1Handlers = (grants: Grants, baseUrl: () => string, pollMs: number, cluster: Effect.Effect<ClusterRunners>) =>
  HttpApiBuilder.group(GatewayApi, "v1", (h) =>
    h
      .handle("whoami", () => Effect.map(Effect.service(Caller), (c) => ({ thread: c.thread })))
      .handle("cluster", () => cluster)
      .handle("events", () => Effect.flatMap(Effect.service(Caller), (c) => eventStream(c.thread, pollMs)))
      .handle("apply", ({ payload }) => Effect.flatMap(Effect.service(Caller), (c) => applyAs(c.thread, payload)))
      .handle("timeline", ({ query }) =>
        Effect.gen(function*() {
          const caller = (yield* Caller).thread
          const views = yield* HistoryViews
          return yield* views.timeline({
            caller,
            thread: query.thread,
            turn: query.turn,
            descendants: query.descendants === "true",
            cursor: yield* openCursor(query.cursor),
            ...num(query.limit),
            maxBytes: query.maxBytes
          }).pipe(Effect.mapError(toApiError), Effect.flatMap((page) => scopedRecordPage(caller, page)))
        }))
      .handle("turn", ({ params, query }) =>
        Effect.gen(function*() {
          const caller = (yield* Caller).thread
          const views = yield* HistoryViews
          return yield* views.turn({ caller, turn: params.turn, cursor: yield* openCursor(query.cursor), ...num(query.limit), maxBytes: query.maxBytes }).pipe(
            Effect.mapError(toApiError),
            Effect.map(sealedPage)
          )
        }))
      .handle("diff", ({ query }) =>
        Effect.gen(function*() {
          const caller = (yield* Caller).thread
          const views = yield* HistoryViews
          return yield* views.diff({
            caller,
            target: yield* scopedTarget(caller, query.target),
            maxLines: query.maxLines,
            cursor: yield* openCursor(query.cursor),
            ...num(query.limit),
            maxBytes: query.maxBytes
          }).pipe(Effect.mapError(toApiError), Effect.map(sealedPage))
        }))
      .handle("file", ({ query }) =>
        Effect.gen(function*() {
          const caller = (yield* Caller).thread
          const views = yield* HistoryViews
          return yield* views.file({ caller, path: query.path, cursor: yield* openCursor(query.cursor), ...num(query.limit), maxBytes: query.maxBytes }).pipe(
            Effect.mapError(toApiError),
            Effect.flatMap((page) => scopedFilePage(caller, page))
          )
        }))
      .handle("runs", () => Effect.gen(function*() {
        return { runs: yield* visibleRuns((yield* Caller).thread) }
      }))
      .handle("run", ({ params }) =>
        Effect.gen(function*() {
          const caller = (yield* Caller).thread
          const store = yield* MergeStore
          const engine = yield* Engine
          const found = yield* store.getRun(params.runId).pipe(Effect.mapError(toApiError))
          if (Option.isNone(found) || found.value.environmentId !== engine.environmentId) {
            return yield* new NotFound({ message: `run ${params.runId} not found` })
          }
          yield* requireSees(caller, found.value.threadId, `run ${params.runId}`)
          const conflicts = yield* store.listConflicts({ environmentId: engine.environmentId, runId: params.runId }).pipe(
            Effect.mapError(toApiError)
          )
          return { run: found.value, conflicts }
        }))
      .handle("agents", () =>
        Effect.gen(function*() {
          const sessions = yield* visibleSessions((yield* Caller).thread)
          return { ok: true as const, agents: sessions.map((d) => d.session) }
        }))
      .handle("agent", ({ params }) =>
        Effect.gen(function*() {
          const caller = (yield* Caller).thread
          // Exact ids only, among the sessions the caller sees: another thread's id is as unknown as a made-up one.
          const detail = (yield* visibleSessions(caller)).find((d) => d.session.agentId === params.agentId)
          if (detail === undefined) return yield* new NotFound({ message: `agent session ${params.agentId} not found` })
          const started = new Set<string>(detail.session.runIds)
          const runs = (yield* visibleRuns(caller)).filter((r) => started.has(r.runId)).reverse()
          return { ok: true as const, agent: detail, runs }
        }))
      .handle("conflicts", ({ query }) =>
        Effect.gen(function*() {
          const caller = (yield* Caller).thread
          const store = yield* MergeStore
          const engine = yield* Engine
          const all = yield* store.listConflicts({
            environmentId: engine.environmentId,
            ...(query.runId === undefined ? {} : { runId: query.runId }),
            ...(query.status === undefined ? {} : { status: query.status })
          }).pipe(Effect.mapError(toApiError))
          return { conflicts: yield* Effect.filter(all, (c: ConflictRecord) => sees(caller, childThreadOf(c))) }
        }))
      .handle("resolve", ({ params, payload }) =>
        Effect.gen(function*() {
          const caller = (yield* Caller).thread
          const store = yield* MergeStore
          const found = yield* store.getConflict(params.conflictId).pipe(Effect.mapError(toApiError))
          if (Option.isNone(found)) return yield* new NotFound({ message: `conflict ${params.conflictId} not found` })
          yield* requireSees(caller, childThreadOf(found.value), `conflict ${params.conflictId}`)
          if (payload.kind === "content" && payload.content === undefined) {
            return yield* new BadRequest({ reason: "InvalidRequest", message: "kind 'content' needs 'content', the merged text" })
          }
          if (payload.kind !== "content" && payload.content !== undefined) {
            return yield* new BadRequest({ reason: "InvalidRequest", message: `kind '${payload.kind}' takes no 'content'` })
          }
          const resolution = payload.kind === "content"
            ? { kind: "content" as const, bytes: new TextEncoder().encode(payload.content ?? "") }
            : { kind: payload.kind }
          const done = yield* Conflicts.resolve(params.conflictId, resolution).pipe(Effect.mapError(toApiError))
          const after = yield* store.getConflict(params.conflictId).pipe(Effect.mapError(toApiError))
          return {
            conflict: Option.getOrElse(after, () => found.value),
            ...(done.record === undefined ? {} : { record: yield* scopedRecord(caller, done.record) }),
            ...(done.outcome === undefined ? {} : { outcome: done.outcome })
          }
        }))
      .handle("rollback", ({ params, query }) =>
        Effect.gen(function*() {
          const caller = (yield* Caller).thread
          if (!(yield* Visibility.seesTransaction(caller, params.transactionId).pipe(Effect.mapError(toApiError)))) {
            return yield* new NotFound({ message: `transaction ${params.transactionId} not found` })
          }
          return yield* Rollback.rollbackTransaction(params.transactionId, { threadId: caller, strict: query.strict === "true" }).pipe(
            Effect.mapError(toApiError),
            Effect.flatMap((record) => scopedRecord(caller, record))
          )
        }))
      .handle("ingest", ({ payload }) =>
        Effect.gen(function*() {
          const caller = (yield* Caller).thread
          const thread = payload.thread ?? caller
          yield* requireSees(caller, thread, `thread ${thread}`)
          const aggregates = yield* ProviderAggregates
          const outcome = yield* aggregates.ingestWithStatus({
            format: payload.format,
            text: payload.text,
            threadId: thread,
            turnId: payload.turn,
            ...(payload.id === undefined ? {} : { id: payload.id })
          }).pipe(Effect.mapError(toApiError))
          return { record: yield* scopedRecord(caller, outcome.record), alreadyRecorded: outcome.alreadyRecorded }
        }))
      .handle("viewGrant", ({ params, payload }) =>
        Effect.gen(function*() {
          const caller = (yield* Caller).thread
          yield* requireSees(caller, params.thread, `thread ${params.thread}`)
          const checked = checkPath(payload.path)
          if (Result.isFailure(checked)) return yield* new BadRequest({ reason: "PathRefused", message: checked.failure.detail })
          const engine = yield* Engine
          // Resolved server-side: a link out of the workspace or a denied path is the engine's refusal.
          const state = (yield* engine.read([checked.success]).pipe(Effect.mapError(toApiError))).get(checked.success)
          if (state === undefined || state._tag === "Missing") return yield* new NotFound({ message: `${checked.success} not found` })
          if (state._tag !== "File") {
            return yield* new Rejected({ code: "not_a_file", paths: [checked.success], message: `${checked.success} is not a regular file` })
          }
          const now = yield* Clock.currentTimeMillis
          const issued = grants.issue({ thread: params.thread, path: checked.success, line: payload.line, column: payload.column }, now)
          return { grant: issued.grant, url: `${baseUrl()}/view/${issued.grant}`, expiresAt: new Date(issued.claims.exp).toISOString() }
        }))
  )

