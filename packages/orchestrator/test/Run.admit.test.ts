/** Refusals before any child starts, and the merge status of a run from its outcomes. */
import { assert, describe, it } from "@effect/vitest"
import * as RunPlan from "@forkjoin/runtime/RunPlan"
import { TaskId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { statusOf } from "../src/Join.ts"
import { admit } from "../src/Run.ts"

const planOf = (autonomy: string | undefined, mode: "read_only" | "transactional_write") => {
  const r = RunPlan.decode({
    schemaVersion: 1,
    ...(autonomy === undefined ? {} : { autonomy }),
    tasks: [{ id: "t", mode, ...(mode === "read_only" ? {} : { writeScope: ["src"] }), actions: [{ finish: {} }] }]
  })
  if (Result.isFailure(r)) throw r.failure
  return r.success
}

describe("admit", () => {
  it.effect("refuses mutating children under off/supervised and inside an open parent batch", () =>
    Effect.gen(function*() {
      for (const level of ["off", "supervised"]) {
        const e = yield* Effect.flip(admit(planOf(level, "transactional_write"), {}))
        assert.strictEqual(e.code, "mutating_subagents_not_granted")
        assert.match(e.message, new RegExp(`autonomy '${level}'`))
      }
      const batch = yield* Effect.flip(admit(planOf("bold", "transactional_write"), { parentBatchOpen: true }))
      assert.strictEqual(batch.code, "mutating_subagents_in_open_batch")
    }))

  it.effect("admits read-only children at any level, and mutating ones at safe, bold or unset", () =>
    Effect.gen(function*() {
      for (const level of ["off", "supervised", "safe", "bold", undefined]) yield* admit(planOf(level, "read_only"), { parentBatchOpen: true })
      for (const level of ["safe", "bold", undefined]) yield* admit(planOf(level, "transactional_write"), {})
    }))
})

describe("statusOf", () => {
  const o = (status: Parameters<typeof statusOf>[0][number]["status"]) => ({ childId: TaskId.make("c"), status })
  it("running while a child is pending, blocked on an open conflict, else applied / partial / failed", () => {
    assert.strictEqual(statusOf([o("applied"), o("pending")]), "running")
    assert.strictEqual(statusOf([o("applied"), o("conflicted_unresolved")]), "blocked")
    assert.strictEqual(statusOf([o("applied"), o("auto_merged"), o("noop"), o("resolved"), o("discarded")]), "applied")
    assert.strictEqual(statusOf([o("applied"), o("baseline_drift")]), "partial")
    assert.strictEqual(statusOf([o("invalid_changeset"), o("apply_failed_rolled_back")]), "failed")
    assert.strictEqual(statusOf([]), "applied")
  })
})
