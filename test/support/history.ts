/** Reads a workspace's patch history from its default database, for cross-package tests. */
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { layerSqlite } from "@forkjoin/history/HistoryStoreSqlite"
import { environmentIdOf } from "@forkjoin/engine/Engine"
import type { PatchHistoryRecord } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"

/** Every record of the workspace's environment, in commit order. */
export const readRecords = (ws: string, db?: string): Promise<ReadonlyArray<PatchHistoryRecord>> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const store = yield* HistoryStore
      return yield* store.recordsAfter(environmentIdOf(fs.realpathSync(ws)), 0, 1_000_000)
    }).pipe(Effect.provide(layerSqlite(db ?? path.join(ws, ".forkjoin", "history.db"))), Effect.scoped)
  )
