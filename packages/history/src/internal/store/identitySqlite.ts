/**
 * The SQLite implementation of `HistoryIdentityStore`: the database's one history id, minted on
 * first use (concurrent callers get the same one), and the resets recorded against it.
 *
 * @since 0.1.0
 */
import { type EnvironmentId, utcTimestampFromMillis } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { randomBytes } from "node:crypto"
import * as path from "node:path"
import {
  HistoryIdentityStore,
  HistoryReset,
  type HistoryIdentity,
  type HistoryResetReason,
  StoreError
} from "../../HistoryStore.ts"
import type { Connection, Sqlite } from "../../Sqlite.ts"
import { messageOf } from "../records.ts"

const SQL = {
  historyId: "SELECT history_id FROM history_identity WHERE singleton = 1",
  insertHistoryId: "INSERT OR IGNORE INTO history_identity (singleton, history_id, created_at) VALUES (1, ?, ?)",
  lastOrdinal: "SELECT COALESCE(MAX(commit_ordinal), 0) AS last FROM records WHERE environment_id = ?",
  openIntentCount: "SELECT COUNT(*) AS n FROM intents WHERE environment_id = ? AND status = 'open'",
  insertReset: "INSERT INTO history_resets (environment_id, reset_at, history_id, previous_history_id, " +
    "previous_last_ordinal, reason) VALUES (?, ?, ?, ?, ?, ?)",
  resets: "SELECT environment_id, reset_at, history_id, previous_history_id, previous_last_ordinal, reason " +
    "FROM history_resets WHERE environment_id = ? ORDER BY reset_at, rowid"
} as const

interface ResetRow {
  readonly environment_id: string
  readonly reset_at: string
  readonly history_id: string
  readonly previous_history_id: string
  readonly previous_last_ordinal: number
  readonly reason: string
}

const decodeReset = Schema.decodeUnknownSync(HistoryReset)

const resetOf = (operation: string, row: ResetRow): HistoryReset => {
  try {
    return decodeReset({
      environmentId: row.environment_id,
      resetAt: row.reset_at,
      historyId: row.history_id,
      previousHistoryId: row.previous_history_id,
      previousLastOrdinal: row.previous_last_ordinal,
      reason: row.reason
    })
  } catch (e) {
    throw new StoreError({ operation, reason: "Corrupt", detail: `a history reset row does not decode: ${messageOf(e)}`, cause: e })
  }
}

/** A fresh history id: 128 random bits, so two databases never share one by chance. */
const mintHistoryId = (): string => `hist-${randomBytes(16).toString("hex")}`

/** The history id of the database, minting it first when it has none. Call inside a transaction. */
const ensureHistoryId = (c: Connection, at: string): string => {
  c.run(SQL.insertHistoryId, mintHistoryId(), at)
  return c.get<{ readonly history_id: string }>(SQL.historyId)!.history_id
}

/** The `HistoryIdentityStore` of the connection `sql` (its location: the database file's path). */
export const makeIdentity = (sql: Sqlite["Service"]): HistoryIdentityStore["Service"] => {
  const identityIn = (c: Connection, location: string | undefined, environmentId: EnvironmentId): HistoryIdentity => ({
    location,
    historyId: c.get<{ readonly history_id: string }>(SQL.historyId)?.history_id,
    lastOrdinal: c.get<{ readonly last: number }>(SQL.lastOrdinal, environmentId)!.last,
    openIntents: c.get<{ readonly n: number }>(SQL.openIntentCount, environmentId)!.n
  })

  const location = sql.file === ":memory:" || sql.file === "" ? undefined : path.resolve(sql.file)

  const identity = Effect.fnUntraced(function*(environmentId: EnvironmentId) {
    return yield* sql.run("HistoryStore.identity", (c) => identityIn(c, location, environmentId))
  })

  const establishIdentity = Effect.fnUntraced(function*(environmentId: EnvironmentId, atMillis: number) {
    const at = utcTimestampFromMillis(atMillis)
    return yield* sql.transaction("HistoryStore.establishIdentity", (c) => {
      ensureHistoryId(c, at)
      return identityIn(c, location, environmentId)
    })
  })

  const resetIdentity = Effect.fnUntraced(function*(
    environmentId: EnvironmentId,
    atMillis: number,
    previous: { readonly historyId: string; readonly lastOrdinal: number; readonly reason: HistoryResetReason }
  ) {
    const operation = "HistoryStore.resetIdentity"
    const at = utcTimestampFromMillis(atMillis)
    return yield* sql.transaction(operation, (c) => {
      const historyId = ensureHistoryId(c, at)
      c.run(SQL.insertReset, environmentId, at, historyId, previous.historyId, previous.lastOrdinal, previous.reason)
      return resetOf(operation, {
        environment_id: environmentId,
        reset_at: at,
        history_id: historyId,
        previous_history_id: previous.historyId,
        previous_last_ordinal: previous.lastOrdinal,
        reason: previous.reason
      })
    })
  })

  const historyResets = Effect.fnUntraced(function*(environmentId: EnvironmentId) {
    const operation = "HistoryStore.historyResets"
    return yield* sql.run(operation, (c) => c.all<ResetRow>(SQL.resets, environmentId).map((row) => resetOf(operation, row)))
  })

  return HistoryIdentityStore.of({ identity, establishIdentity, resetIdentity, historyResets })
}
