/** Stage 5 budgets: the pure comparison and the usage reads it needs (and only those). */
import { RelativePath, TurnId } from "@forkjoin/schema/Ids"
import { HistoryStore, StoreError, type Usage } from "@forkjoin/history/HistoryStore"
import { layerMemory } from "@forkjoin/history/HistoryStoreSqlite"
import { assert, describe, it } from "@effect/vitest"
import type { Plan } from "@forkjoin/patch"
import type { EnvironmentId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import { checkBudget, checkBudgets } from "../src/internal/budgets.ts"

const plan: Plan = {
  files: [
    { kind: "add", path: RelativePath.make("a"), before: undefined, after: new Uint8Array(6) },
    { kind: "delete", path: RelativePath.make("b"), before: new Uint8Array(9), after: undefined }
  ],
  summary: []
}

/** A store whose only working method is `usage`, answering `turn` or `workspace` usage and counting calls. */
const usageStore = (turn: Usage, workspace: Usage | StoreError) =>
  Effect.gen(function*() {
    const real = yield* HistoryStore
    const calls: Array<string | undefined> = []
    const store = HistoryStore.of({
      ...real,
      usage: (_env, turnId) => {
        calls.push(turnId)
        if (turnId !== undefined) return Effect.succeed(turn)
        return workspace instanceof StoreError ? Effect.fail(workspace) : Effect.succeed(workspace)
      }
    })
    return { store, calls }
  }).pipe(Effect.provide(layerMemory))

const env = "env-test" as EnvironmentId

describe("budgets", () => {
  it("adds the plan's written bytes and files to the usage", () => {
    assert.isUndefined(checkBudget(plan, { bytes: 4, files: 1 }, 10, 3, "turn 't'"))
    const over = checkBudget(plan, { bytes: 5, files: 1 }, 10, undefined, "turn 't'")
    assert.deepStrictEqual([over?.code, over?.stage, over?.paths], ["budget_exceeded", 5, ["a", "b"]])
    assert.include(over?.message ?? "", "bring the turn 't' to 11 bytes / 3 files, over its budget of 10 bytes / ∞ files")
    assert.strictEqual(checkBudget(plan, { bytes: 0, files: 2 }, undefined, 3, "workspace")?.code, "budget_exceeded")
  })

  it.effect("reads usage only for the budgets that are set", () =>
    Effect.gen(function*() {
      const none = yield* usageStore({ bytes: 0, files: 0 }, { bytes: 0, files: 0 })
      yield* checkBudgets({ store: none.store, environmentId: env, budgets: undefined }, TurnId.make("t"), plan)
      yield* checkBudgets({ store: none.store, environmentId: env, budgets: { workspaceFiles: 100 } }, TurnId.make("t"), plan)
      assert.deepStrictEqual(none.calls, [undefined])
    }))

  it.effect("the turn budget is checked before the workspace budget", () =>
    Effect.gen(function*() {
      const { store } = yield* usageStore({ bytes: 100, files: 0 }, { bytes: 100, files: 0 })
      const error = yield* Effect.flip(checkBudgets({ store, environmentId: env, budgets: { turnBytes: 50, workspaceBytes: 50 } }, TurnId.make("t"), plan))
      assert.include(error.message, "turn 't'")
    }))

  it.effect("a busy database while reading usage is history_unavailable at stage 7 with its cause", () =>
    Effect.gen(function*() {
      const busy = new StoreError({ operation: "HistoryStore.usage", reason: "Busy" })
      const { store } = yield* usageStore({ bytes: 0, files: 0 }, busy)
      const error = yield* Effect.flip(checkBudgets({ store, environmentId: env, budgets: { workspaceBytes: 50 } }, TurnId.make("t"), plan))
      assert.deepStrictEqual([error.code, error.stage], ["history_unavailable", 7])
      assert.strictEqual(error.cause, busy)
    }))
})
