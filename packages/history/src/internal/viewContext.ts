/**
 * What every history view shares: the connection and environment it reads, how a view body
 * refuses a request (throwing a `ViewError` that `runView` turns into a failure, while a
 * store failure stays a `StoreError` and anything else stays a defect), the caller's scope,
 * and row decoding.
 */
import type { EnvironmentId, PatchHistoryRecord, Sha256Hash, Snapshot } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import type { StoreError } from "../HistoryStore.ts"
import * as SnapshotStore from "../SnapshotStore.ts"
import type { Connection, Sqlite } from "../Sqlite.ts"
import { ViewError } from "../ViewError.ts"
import { decodeRecordJsonRow, type RecordRow } from "./records.ts"
import { SQL } from "./viewQueries.ts"

/** What a view answers: its page, a refusal, or a store failure. */
export type ViewEffect<A> = Effect.Effect<A, ViewError | StoreError>

/** The views' shared setting: one connection, one environment, the real workspace root if known. */
export interface ViewContext {
  readonly sql: typeof Sqlite.Service
  readonly env: EnvironmentId
  readonly root: string | undefined
}

/** A refusal of a request. */
export const fail = (operation: string, reason: ViewError["reason"], detail: string): ViewError =>
  new ViewError({ operation, reason, detail })

/** `sql.run` whose body may throw a `ViewError` (a refusal, not a bug). */
export const runView = <A>(ctx: ViewContext, operation: string, body: (c: Connection) => A): ViewEffect<A> =>
  ctx.sql.run(operation, (c): { readonly ok: A } | { readonly refused: ViewError } => {
    try {
      return { ok: body(c) }
    } catch (e) {
      if (e instanceof ViewError) return { refused: e }
      throw e
    }
  }).pipe(Effect.flatMap((r) => ("refused" in r ? Effect.fail(r.refused) : Effect.succeed(r.ok))))

/**
 * The caller's thread and its registered descendants; with `everyThread` (the workspace's own
 * user), every thread of environment `env` too: those with records and those registered.
 */
export const scopeOf = (c: Connection, caller: string, everyThread?: { readonly env: EnvironmentId } | undefined): Array<string> => {
  const own = c.all<{ readonly t: string }>(SQL.scope, caller).map((r) => r.t)
  if (everyThread === undefined) return own
  return [...new Set([...own, ...c.all<{ readonly t: string }>(SQL.everyThread, everyThread.env).map((r) => r.t)])]
}

/** `scopeOf` for a request that may ask for every thread (`everyThread`). */
export const requestScope = (c: Connection, env: EnvironmentId, request: { readonly caller: string; readonly everyThread?: boolean | undefined }): Array<string> =>
  scopeOf(c, request.caller, request.everyThread === true ? { env } : undefined)

/** Decodes a record row (a row that does not decode is a corrupt store, not a refusal). */
export const decodeRow: (operation: string, row: RecordRow) => PatchHistoryRecord = decodeRecordJsonRow

/** Whether a record has an exact verification record, on this connection. */
export const isVerifiedIn = (c: Connection) => (r: PatchHistoryRecord): boolean =>
  c.get(SQL.verified, r.recordId) !== undefined

/**
 * The hashes among `snapshots` whose content retention pruned, as a view's optional `pruned`
 * field: absent when none is (no content is read).
 */
export const prunedField = (
  c: Connection,
  snapshots: ReadonlyArray<Snapshot | undefined>
): { readonly pruned?: ReadonlyArray<Sha256Hash> } => {
  const pruned = snapshots.flatMap((s) => (s !== undefined && SnapshotStore.stateOf(c, s.hash) === "pruned" ? [s.hash] : []))
  return pruned.length === 0 ? {} : { pruned }
}

/** Why the named caller is not a valid thread id, if it is not. */
export const callerProblem = (operation: string, caller: unknown): ViewError | undefined =>
  typeof caller !== "string" || caller.length === 0 || caller.length > 256
    ? fail(operation, "InvalidRequest", "name the caller's thread (a non-empty thread id)")
    : undefined

/** `callerProblem` for a view body: throws the refusal. */
export const checkCaller = (operation: string, caller: unknown): void => {
  const problem = callerProblem(operation, caller)
  if (problem !== undefined) throw problem
}
