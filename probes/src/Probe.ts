/**
 * The deterministic subagent merge probe (SPEC §8): every scenario of the catalogue
 * (`@forkjoin/autonomy/Scenarios`), in its order, scripted (no model) through the real
 * orchestrator, engine and history, each in a scratch workspace of its own under
 * `<workspace>/.forkjoin/probe/` (the target's filesystem), removed afterwards whatever
 * happened. It never touches the user's files: it only creates `.forkjoin/probe/` (and
 * `.forkjoin/` when missing), and removes what it created.
 *
 * Owns running the scenarios and turning each into a `ScenarioResult` whose assertions are
 * deterministic (paths, run ids, uuids and timestamps are scrubbed from failure details). Does
 * not own the evidence file, its digest, the filesystem facts or the gate
 * (`@forkjoin/autonomy`), nor the `forkjoin probe` command.
 *
 * @since 0.1.0
 */
import { scenarios, type ScenarioSpec } from "@forkjoin/autonomy/Scenarios"
import type { ProbeAssertion, ScenarioResult } from "@forkjoin/schema/Evidence"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as fs from "node:fs"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { makeChecks, type Scenario } from "./internal/harness.ts"
import { baselineDriftRefused, baselineUnverifiableRefused } from "./scenarios/baseline.ts"
import { crashEachStageRepaired, midApplyFailureRolledBack } from "./scenarios/faults.ts"
import { disjointChildrenApplied, overlapConflictResolved, sameFileAutoMerged } from "./scenarios/join.ts"
import { completionOrderIndependent } from "./scenarios/order.ts"
import { rollbackOneChild } from "./scenarios/rollback.ts"
import { tamperedMissingScopeRefused, tamperedOutsideScopeRefused, tamperedPathMismatchRefused } from "./scenarios/tampered.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * How to run the probe: the target `workspace` (scratch workspaces go below its
 * `.forkjoin/probe/`), the argv prefix that starts the forkjoin CLI for the scenarios that
 * need a process to kill or a fault to inject (e.g. `[process.execPath, ".../bin/forkjoin.mjs"]`),
 * and `onScenario`, told each result as soon as it is known (progress).
 *
 * @category models
 * @since 0.1.0
 */
export interface ProbeOptions {
  readonly workspace: string
  readonly forkjoin: ReadonlyArray<string>
  readonly onScenario?: (result: ScenarioResult) => Effect.Effect<void>
}

// -------------------------------------------------------------------------------------
// internals
// -------------------------------------------------------------------------------------

/** The scenario implementations by catalogue id (a catalogue id missing here is reported failed). */
const implementations: Readonly<Record<string, Scenario>> = {
  disjoint_children_applied: disjointChildrenApplied,
  same_file_auto_merged: sameFileAutoMerged,
  overlap_conflict_resolved: overlapConflictResolved,
  baseline_drift_refused: baselineDriftRefused,
  baseline_unverifiable_refused: baselineUnverifiableRefused,
  tampered_path_mismatch_refused: tamperedPathMismatchRefused,
  tampered_missing_scope_refused: tamperedMissingScopeRefused,
  tampered_outside_scope_refused: tamperedOutsideScopeRefused,
  mid_apply_failure_rolled_back: midApplyFailureRolledBack,
  rollback_one_child: rollbackOneChild,
  crash_each_stage_repaired: crashEachStageRepaired,
  completion_order_independent: completionOrderIndependent
}

const MAX_DETAIL = 400

/** The probe's folder below the workspace, or why it cannot be used, and the folders it created. */
interface ScratchArea {
  readonly probeDir: string | undefined
  readonly problem: string | undefined
  readonly created: ReadonlyArray<string>
  readonly workspacePaths: ReadonlyArray<string>
}

const errorText = (u: unknown): string => {
  if (typeof u === "object" && u !== null) {
    const tag = "_tag" in u && typeof u._tag === "string" ? u._tag : u instanceof Error ? u.name : "Error"
    const message = "message" in u && typeof u.message === "string" ? u.message : String(u)
    return `${tag}: ${message}`
  }
  return String(u)
}

/**
 * Creates `<workspace>/.forkjoin/probe/` (each missing level remembered, to remove it
 * afterwards). A level that is a link or a file is refused: the probe never writes through a
 * link, so it never writes outside the workspace.
 */
const openScratch = (workspace: string): Effect.Effect<ScratchArea> =>
  Effect.sync(() => {
    const created: Array<string> = []
    const workspacePaths = [path.resolve(workspace)]
    try {
      const root = fs.realpathSync(workspace)
      workspacePaths.push(root)
      let dir = root
      for (const name of [".forkjoin", "probe"]) {
        dir = path.join(dir, name)
        const stat = fs.lstatSync(dir, { throwIfNoEntry: false })
        if (stat === undefined) {
          fs.mkdirSync(dir)
          created.push(dir)
        } else if (!stat.isDirectory()) {
          const rel = path.relative(root, dir).split(path.sep).join("/")
          return {
            probeDir: undefined,
            problem: `'${rel}' is ${stat.isSymbolicLink() ? "a symbolic link" : "not a folder"}; the probe only writes to a real folder inside the workspace`,
            created,
            workspacePaths
          }
        }
      }
      return { probeDir: dir, problem: undefined, created, workspacePaths }
    } catch (e) {
      return { probeDir: undefined, problem: `the probe's folder cannot be created (${errorText(e)})`, created, workspacePaths }
    }
  })

/** Removes the folders `openScratch` created, innermost first, when they are empty again. */
const closeScratch = (area: ScratchArea): Effect.Effect<void> =>
  Effect.sync(() => {
    for (const dir of [...area.created].reverse()) {
      try {
        fs.rmdirSync(dir)
      } catch {
        // Not empty (something else wrote there meanwhile): left as it is.
      }
    }
  })

/** Failure details without anything that differs between runs: paths, run ids, uuids, timestamps. */
const scrub = (paths: ReadonlyArray<readonly [string, string]>) => (text: string): string => {
  let out = text
  for (const [p, name] of paths) out = out.split(p).join(name)
  out = out
    .replace(/run-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "run-<id>")
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<uuid>")
    .replace(/env-[0-9a-f]{20}/g, "env-<id>")
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g, "<time>")
  return out.length > MAX_DETAIL ? `${out.slice(0, MAX_DETAIL)}…` : out
}

/** Runs one scenario in a fresh scratch workspace and returns its assertions. */
const assertionsOf = (spec: ScenarioSpec, area: ScratchArea, forkjoin: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const checks = makeChecks()
    const implementation = implementations[spec.id]
    if (implementation === undefined) return [{ name: "the scenario is implemented by this build", passed: false, detail: `no implementation for '${spec.id}'` }]
    if (area.probeDir === undefined) return [{ name: "the scenario's scratch workspace can be created", passed: false, detail: area.problem ?? "unknown problem" }]
    const probeDir = area.probeDir
    let dir: string | undefined
    let removal: string | undefined
    const exit = yield* Effect.acquireUseRelease(
      Effect.try({ try: () => fs.realpathSync(fs.mkdtempSync(path.join(probeDir, `${spec.id}-`))), catch: (e) => e }),
      (scratch) => {
        dir = scratch
        return implementation({ dir: scratch, forkjoin, checks })
      },
      (scratch) =>
        Effect.sync(() => {
          try {
            fs.rmSync(scratch, { recursive: true, force: true, maxRetries: 3 })
          } catch (e) {
            removal = errorText(e)
          }
        })
    ).pipe(Effect.exit)
    const assertions: Array<ProbeAssertion> = [...checks.all()]
    if (Exit.isFailure(exit)) assertions.push({ name: "the scenario runs to completion", passed: false, detail: errorText(Cause.squash(exit.cause)) })
    else if (assertions.length === 0) assertions.push({ name: "the scenario checks something", passed: false, detail: "it made no assertion" })
    if (removal !== undefined) assertions.push({ name: "the scenario's scratch workspace is removed", passed: false, detail: removal })
    // Longest first: the scratch folder is inside the probe's, itself inside the workspace.
    const names: Array<readonly [string, string]> = [
      ...(dir === undefined ? [] : [[dir, "<scratch>"] as const]),
      [probeDir, "<probe>"],
      ...area.workspacePaths.map((p) => [p, "<workspace>"] as const)
    ]
    const clean = scrub(names.sort((a, b) => b[0].length - a[0].length))
    return assertions.map((a) => (a.detail === undefined ? a : { ...a, detail: clean(a.detail) }))
  })

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

/**
 * Runs every catalogue scenario in order and returns their results (`durationMs` is the only
 * part that differs between runs). Never fails: a scenario that cannot run is `failed` with an
 * assertion naming why.
 *
 * @category constructors
 * @since 0.1.0
 */
export const run = (options: ProbeOptions): Effect.Effect<ReadonlyArray<ScenarioResult>> =>
  Effect.acquireUseRelease(
    openScratch(options.workspace),
    (area) =>
      Effect.forEach(scenarios, (spec) =>
        Effect.gen(function*() {
          const started = performance.now()
          const assertions = yield* assertionsOf(spec, area, options.forkjoin)
          const result: ScenarioResult = {
            id: spec.id,
            title: spec.title,
            status: assertions.every((a) => a.passed) ? "passed" : "failed",
            assertions,
            durationMs: Math.round(performance.now() - started)
          }
          if (options.onScenario !== undefined) yield* options.onScenario(result)
          return result
        })),
    closeScratch
  )
