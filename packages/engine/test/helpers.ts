/** Engine test helpers: temp workspaces, tree hashing, and running an engine over a store layer. */
import { layerMemory, layerSqlite } from "@forkjoin/history/HistoryStoreSqlite"
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import type { PatchHistoryRecord } from "@forkjoin/schema"
import type { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"
import { Engine, type EngineConfig } from "../src/Engine.ts"
import { sandboxes, writeTree } from "../../../test/support/sandbox.ts"
import { hashTree } from "../../../test/support/tree.ts"

/** Fresh temp workspaces (no `.forkjoin/` yet); `removeSandboxes` removes every one made. */
export const { makeWorkspace, removeSandboxes } = sandboxes("fj-engine-", { stateDir: false })

export { writeTree }

/** Hash of the workspace tree excluding forkjoin's own state directory. */
export const treeHash = (ws: string): string => {
  const state = path.join(ws, ".forkjoin")
  const aside = `${ws}.state-aside`
  const had = fs.existsSync(state)
  if (had) fs.renameSync(state, aside)
  try {
    return hashTree(ws)
  } finally {
    if (had) fs.renameSync(aside, state)
  }
}

/** Runs `f` with an engine over `ws` and a memory store (or a sqlite file), returning the exit and all records. */
export const withEngine = async <A>(
  ws: string,
  f: (engine: Engine["Service"]) => Effect.Effect<A, EngineError>,
  config: Partial<EngineConfig> = {},
  db?: string
): Promise<{ exit: Exit.Exit<A, unknown>; records: ReadonlyArray<PatchHistoryRecord> }> => {
  const store = db === undefined ? layerMemory : layerSqlite(db)
  const program = Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryStore
    const exit = yield* Effect.exit(f(engine))
    const records = yield* history.recordsAfter(engine.environmentId, 0, 10_000)
    return { exit, records }
  })
  return Effect.runPromise(
    program.pipe(Effect.provide(Engine.layer({ root: ws, ...config }).pipe(Layer.provideMerge(store))), Effect.scoped)
  ) as Promise<{ exit: Exit.Exit<A, unknown>; records: ReadonlyArray<PatchHistoryRecord> }>
}

/** The failure of an exit as an EngineError (throws when the exit succeeded). */
export const failureOf = (exit: Exit.Exit<unknown, unknown>): EngineError => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure, got success")
  const err = exit.cause.reasons.find((r) => r._tag === "Fail")
  if (err === undefined || err._tag !== "Fail") throw new Error(`expected a typed failure, got ${String(exit.cause)}`)
  return err.error as EngineError
}

/** Wraps body lines in patch markers. */
export const patchOf = (...body: ReadonlyArray<string>): string => ["*** Begin Patch", ...body, "*** End Patch"].join("\n")
