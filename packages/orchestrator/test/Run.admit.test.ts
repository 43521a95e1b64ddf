/** Refusals before any child starts, and the merge status of a run from its outcomes. */
import { assert, describe, it } from "@effect/vitest"
import { afterAll } from "vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
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
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "fj-admit-"))
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
  const gate = (env: Record<string, string>) => ({ _tag: "Gate" as const, env })

  it.effect("refuses mutating children when the plan lowers the level to off/supervised, and inside an open parent batch", () =>
    Effect.gen(function*() {
      for (const level of ["off", "supervised"]) {
        const e = yield* Effect.flip(admit(planOf(level, "transactional_write"), { root, admission: gate({ FORKJOIN_AUTONOMY: "bold" }) }))
        assert.strictEqual(e._tag, "OrchestratorError")
        if (e._tag === "OrchestratorError") {
          assert.strictEqual(e.code, "mutating_subagents_not_granted")
          assert.match(e.message, new RegExp(`level ${level}|${level}`))
        }
      }
      const batch = yield* Effect.flip(admit(planOf("bold", "transactional_write"), { root, parentBatchOpen: true }))
      assert.strictEqual(batch._tag === "OrchestratorError" ? batch.code : batch._tag, "mutating_subagents_in_open_batch")
    }))

  it.effect("the built-in level (supervised) refuses mutating children and says how to promote; read-only children need no decision", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(admit(planOf(undefined, "transactional_write"), { root, admission: gate({}) }))
      assert.strictEqual(e._tag === "OrchestratorError" ? e.code : e._tag, "mutating_subagents_not_granted")
      assert.match(e.message, /FORKJOIN_AUTONOMY=safe/)
      for (const level of ["off", "supervised", "safe", "bold", undefined]) {
        assert.strictEqual(yield* admit(planOf(level, "read_only"), { root, parentBatchOpen: true, admission: gate({}) }), undefined)
      }
    }))

  it.effect("safe without evidence is blocked (evidence_missing); bold is skipped with a warning; a plan cannot raise the level", () =>
    Effect.gen(function*() {
      const blocked = yield* Effect.flip(admit(planOf(undefined, "transactional_write"), { root, admission: gate({ FORKJOIN_AUTONOMY: "safe" }) }))
      assert.strictEqual(blocked._tag === "OrchestratorError" ? blocked.code : blocked._tag, "promotion_gate_blocked")
      assert.match(blocked.message, /forkjoin probe/)
      const skipped = yield* admit(planOf(undefined, "transactional_write"), { root, admission: gate({ FORKJOIN_AUTONOMY: "bold" }) })
      assert.strictEqual(skipped?.status, "skipped")
      assert.isAbove(skipped?.warnings.length ?? 0, 0)
      const capped = yield* Effect.flip(admit(planOf("bold", "transactional_write"), { root, admission: gate({ FORKJOIN_AUTONOMY: "safe" }) }))
      assert.strictEqual(capped._tag === "OrchestratorError" ? capped.code : capped._tag, "promotion_gate_blocked")
    }))

  it.effect("an exempt scratch run needs no decision; a malformed setting is an AutonomyError naming the variable", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* admit(planOf(undefined, "transactional_write"), { root, admission: { _tag: "Exempt", reason: "test" } }), undefined)
      const bad = yield* Effect.flip(admit(planOf(undefined, "transactional_write"), { root, admission: gate({ FORKJOIN_AUTONOMY: "sage" }) }))
      assert.strictEqual(bad._tag, "AutonomyError")
      assert.match(bad.message, /FORKJOIN_AUTONOMY/)
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
