/**
 * Fault injection through the real CLI in child processes (a sealed `FORKJOIN_FAULT`, set
 * explicitly for each process, never inherited): a write failing in the middle of one child's join
 * transaction rolls that child back and keeps its siblings; a `forkjoin apply` killed after
 * each of the engine's ten stages is repaired when the engine next opens (in-process), to
 * exactly the before or the after state, with history agreeing and the workspace usable.
 *
 * Owns the scenarios' fixtures and expectations, not the faults (`@forkjoin/engine/Fault`,
 * `FaultChannel`).
 */
import { Engine } from "@forkjoin/engine/Engine"
import { HistoryJournal } from "@forkjoin/history/HistoryStore"
import { sha256 } from "@forkjoin/patch/Bytes"
import { ThreadId, TurnId } from "@forkjoin/schema/Ids"
import { ChildOutcome } from "@forkjoin/schema/MergeRun"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as path from "node:path"
import {
  bytesAt,
  canonical,
  type Checks,
  childTransaction,
  cli,
  editTask,
  inWorkspace,
  lastJsonLine,
  makeCliWorkspace,
  patchOf,
  planOf,
  records,
  type Scenario,
  ScenarioError,
  transactionsOf,
  treeOf,
  workspaceTree,
  writeFiles
} from "../internal/harness.ts"

/** The part of `forkjoin run --json` the scenario reads (other keys ignored). */
const RunJson = Schema.Struct({
  runId: Schema.String,
  mergeExecution: Schema.Struct({ status: Schema.String, outcomes: Schema.Array(ChildOutcome) }),
  finish: Schema.Struct({ ok: Schema.Boolean })
})

const decodeRunJson = Schema.decodeUnknownResult(RunJson)

const MID_APPLY_FILES = { "a/x.txt": "x\n", "b/1.txt": "one\n", "b/2.txt": "two\n", "b/3.txt": "three\n", "c/z.txt": "z\n" }

/**
 * `mid_apply_failure_rolled_back`: `forkjoin run` with `merge:write-fail:b:2`: child b (four
 * writes) fails at its second write and is rolled back byte-exact; a and c are applied.
 *
 * @category constants
 * @since 0.1.0
 */
export const midApplyFailureRolledBack: Scenario = ({ dir, checks, forkjoin }) =>
  Effect.gen(function*() {
    const ws = yield* makeCliWorkspace(path.join(dir, "ws"))
    const planFile = path.join(dir, "plan.json")
    yield* writeFiles(ws, MID_APPLY_FILES)
    yield* writeFiles(dir, {
      "plan.json": JSON.stringify(planOf([
        editTask("a", ["a"], ["*** Update File: a/x.txt", "@@", "-x", "+X"]),
        editTask("b", ["b"], [
          "*** Update File: b/1.txt", "@@", "-one", "+ONE",
          "*** Update File: b/2.txt", "@@", "-two", "+TWO",
          "*** Delete File: b/3.txt",
          "*** Add File: b/4.txt", "+four"
        ]),
        editTask("c", ["c"], ["*** Update File: c/z.txt", "@@", "-z", "+Z"])
      ]))
    })
    const r = yield* cli(forkjoin, ["run", planFile, "--workspace", ws, "--json"], { fault: "merge:write-fail:b:2" })
    checks.equal("forkjoin run exits 1 (the join is not finished)", r.status, 1)
    const decoded = decodeRunJson(yield* lastJsonLine("Reading forkjoin run --json", r))
    if (Result.isFailure(decoded)) return yield* new ScenarioError({ operation: "Decoding forkjoin run --json", detail: decoded.failure.message })
    const out = decoded.success
    const b = out.mergeExecution.outcomes.find((o) => o.childId === "b")
    checks.equal("child b ends apply_failed_rolled_back", b?.status ?? "no outcome", "apply_failed_rolled_back")
    checks.that(
      "child b names the path whose write failed",
      b?.failedPath !== undefined && ["b/1.txt", "b/2.txt", "b/3.txt", "b/4.txt"].includes(b.failedPath),
      () => `got ${JSON.stringify(b?.failedPath ?? "no path")}`
    )
    checks.files("child b's files are byte-exact as before it", ws, { "b/1.txt": "one\n", "b/2.txt": "two\n", "b/3.txt": "three\n", "b/4.txt": undefined })
    checks.equal(
      "children a and c end applied",
      out.mergeExecution.outcomes.filter((o) => o.childId !== "b").map((o) => [o.childId, o.status]),
      [["a", "applied"], ["c", "applied"]]
    )
    checks.equal("the workspace holds exactly children a and c's changes", workspaceTree(ws), treeOf({ ...MID_APPLY_FILES, "a/x.txt": "X\n", "c/z.txt": "Z\n" }))
    checks.equal("finish is refused", out.finish.ok, false)
    const rs = yield* inWorkspace(ws, records)
    checks.equal("history has records of children a and c only", transactionsOf(rs), [childTransaction(out.runId, "a"), childTransaction(out.runId, "c")])
  })

const CRASH_FILES = { "src/keep.txt": "keep\n", "src/edit.txt": "e1\ne2\ne3\n", "src/gone.txt": "gone\n" }
const CRASH_PATCH = patchOf("*** Update File: src/edit.txt", "@@", " e1", "-e2", "+E2", "*** Add File: src/new/added.txt", "+added", "*** Delete File: src/gone.txt")
const CRASH_AFTER = { "src/keep.txt": "keep\n", "src/edit.txt": "e1\nE2\ne3\n", "src/new/added.txt": "added\n" }
const STAGES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] as const
// Two processes at once: the machine the probe targets may have two cores.
const CRASH_CONCURRENCY = 2

/** After the crash of stage `stage`: repair in-process, then check state, history and a following apply. */
const checkRepaired = (stage: number, ws: string, checks: Checks) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryJournal
    const tree = workspaceTree(ws)
    const state = canonical(tree) === canonical(treeOf(CRASH_FILES)) ? "before" : canonical(tree) === canonical(treeOf(CRASH_AFTER)) ? "after" : "neither"
    checks.that(`stage ${stage}: the workspace is exactly the before or the after state`, state !== "neither", () => `got ${canonical(tree)}`)
    const intents = yield* history.openIntents(engine.environmentId)
    checks.equal(`stage ${stage}: no journal intent is left open`, intents.length, 0)
    const rs = yield* records
    // An applied record iff the after state, and its after-images are the files on disk.
    const agrees = state === "after"
      ? rs.length === 1 && rs[0]!.outcome === "applied" && rs[0]!.changes.every((c) => {
        const bytes = bytesAt(ws, c.path)
        return c.after === undefined ? bytes === undefined : bytes !== undefined && sha256(bytes) === c.after.hash
      })
      : rs.length === 0
    checks.that(`stage ${stage}: history has an applied record iff the after state`, agrees, () => `state ${state}, records ${canonical(rs.map((r) => [r.outcome, r.changes.map((c) => c.path)]))}`)
    const next = yield* engine.applyPatch({
      patch: patchOf("*** Update File: src/keep.txt", "@@", "-keep", "+kept"),
      threadId: ThreadId.make("probe"),
      turnId: TurnId.make("probe")
    }).pipe(Effect.result)
    checks.that(`stage ${stage}: a following apply succeeds`, Result.isSuccess(next) && bytesAt(ws, "src/keep.txt")?.toString("utf8") === "kept\n", () =>
      Result.isFailure(next) ? `${next.failure.code}: ${next.failure.message}` : "the file does not hold the following apply's content")
  })

/**
 * `crash_each_stage_repaired`: for each engine stage 1..10, `forkjoin apply` (an update, an
 * add in a new folder, a delete) is SIGKILLed right after that stage; opening the engine
 * in-process repairs it.
 *
 * @category constants
 * @since 0.1.0
 */
export const crashEachStageRepaired: Scenario = ({ dir, checks, forkjoin }) =>
  Effect.gen(function*() {
    const crashed = yield* Effect.forEach(STAGES, (stage) =>
      Effect.gen(function*() {
        const ws = yield* makeCliWorkspace(path.join(dir, `stage-${stage}`))
        yield* writeFiles(ws, CRASH_FILES)
        const r = yield* cli(forkjoin, ["apply", "-", "--workspace", ws, "--json"], { fault: `stage:${stage}`, stdin: CRASH_PATCH })
        return { stage, ws, r }
      }), { concurrency: CRASH_CONCURRENCY })
    for (const { stage, ws, r } of crashed) {
      checks.that(`stage ${stage}: forkjoin apply is killed after the stage`, r.signal === "SIGKILL", () =>
        `exit ${r.status}, signal ${r.signal}: ${r.stderr.trim().split("\n").slice(-2).join(" | ")}`)
      yield* inWorkspace(ws, checkRepaired(stage, ws, checks))
    }
  })
