/**
 * The merge probe end to end, in-process (issue 11 part 1, SPEC §8): every catalogue scenario
 * passes on a clean build, in catalogue order; two runs give identical results once durations
 * are dropped (the digest's input); the probe leaves nothing in `<workspace>/.forkjoin/probe/`
 * and touches no other file of the workspace; a scenario that cannot run is reported failed
 * with the error named instead of crashing the probe; a `.forkjoin` link is refused.
 * The CLI scenarios run the bundle, rebuilt from the current sources first.
 */
import { assert, describe, it } from "@effect/vitest"
import { scenarios } from "@forkjoin/autonomy/Scenarios"
import { Probe } from "@forkjoin/probes"
import type { ScenarioResult } from "@forkjoin/schema/Evidence"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { buildCli } from "../../packages/cli/test/helpers.ts"
import { projectRoot, readTree } from "../../test/support/tree.ts"

const FORKJOIN = [process.execPath, path.join(projectRoot, "packages/cli/bin/forkjoin.mjs")]

const dirs: Array<string> = []
beforeAll(buildCli)
afterAll(() => dirs.splice(0).forEach((d) => fs.rmSync(d, { recursive: true, force: true })))

/** A fresh workspace holding a few user files. */
const userWorkspace = (): string => {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "fj-probe-")))
  dirs.push(ws)
  fs.mkdirSync(path.join(ws, "src"))
  fs.writeFileSync(path.join(ws, "src/app.ts"), "export const app = 1\n")
  fs.writeFileSync(path.join(ws, "README.md"), "# mine\n")
  return ws
}

/** The results without what may differ between runs (the digest's input). */
const withoutDurations = (results: ReadonlyArray<ScenarioResult>) => results.map(({ durationMs: _d, ...r }) => r)

const failedAssertions = (results: ReadonlyArray<ScenarioResult>) =>
  results.flatMap((r) => r.assertions.filter((a) => !a.passed).map((a) => `${r.id}: ${a.name}: ${a.detail ?? ""}`))

/**
 * One probe run of `ws` that must leave nothing in `.forkjoin/probe/` and touch no other file of
 * the workspace, each scenario's folder gone before the next starts; returns the results.
 */
const runLeavingNothing = (ws: string) =>
  Effect.gen(function*() {
    const before = readTree(ws)
    const probeDir = path.join(ws, ".forkjoin", "probe")
    const leftovers: Array<string> = []
    const told: Array<string> = []
    const results = yield* Probe.run({
      workspace: ws,
      forkjoin: FORKJOIN,
      onScenario: (r) =>
        Effect.sync(() => {
          told.push(r.id)
          // The probe's folder exists while it runs, and the finished scenario's workspace is already gone.
          leftovers.push(...(fs.existsSync(probeDir) ? fs.readdirSync(probeDir) : ["(no .forkjoin/probe folder)"]))
        })
    })
    assert.deepStrictEqual(failedAssertions(results), [])
    assert.deepStrictEqual(told, scenarios.map((s) => s.id))
    assert.deepStrictEqual(leftovers, [])
    assert.isFalse(fs.existsSync(probeDir))
    assert.deepStrictEqual(readTree(ws), before)
    return results
  })

describe("Probe.run", () => {
  // A full probe run takes seconds: the first run of a fresh workspace is also the one checked
  // for leaving nothing behind.
  it.effect("passes every catalogue scenario, in catalogue order, leaving nothing in .forkjoin/probe/ and no other file touched; two runs give identical results without durations", () =>
    Effect.gen(function*() {
      const ws = userWorkspace()
      const first = yield* runLeavingNothing(ws)
      assert.deepStrictEqual(first.map((r) => r.id), scenarios.map((s) => s.id))
      assert.deepStrictEqual(first.map((r) => r.title), scenarios.map((s) => s.title))
      assert.deepStrictEqual(failedAssertions(first), [])
      assert.isTrue(first.every((r) => r.status === "passed" && r.assertions.length > 0))
      // Names are stable text: no run ids, uuids or paths.
      for (const a of first.flatMap((r) => r.assertions)) assert.notMatch(a.name, /run-[0-9a-f]{8}|[0-9a-f]{8}-[0-9a-f]{4}-|\/tmp\//)
      const second = yield* Probe.run({ workspace: ws, forkjoin: FORKJOIN })
      assert.deepStrictEqual(withoutDurations(second), withoutDurations(first))
    }), 120_000)

  it.effect("with forkjoin state of the user already in .forkjoin/, leaves it as it was and nothing in .forkjoin/probe/; each scenario's folder is gone before the next", () =>
    Effect.gen(function*() {
      const ws = userWorkspace()
      fs.mkdirSync(path.join(ws, ".forkjoin"))
      fs.writeFileSync(path.join(ws, ".forkjoin", "keep.txt"), "forkjoin state of the user\n")
      yield* runLeavingNothing(ws)
    }), 120_000)

  it.effect("a scenario that cannot run is failed with the error named; the others still pass", () =>
    Effect.gen(function*() {
      const ws = userWorkspace()
      const before = readTree(ws)
      // No CLI to start: the two scenarios that need a process fail, the in-process ones pass.
      const results = yield* Probe.run({ workspace: ws, forkjoin: [path.join(ws, "no-such-forkjoin")] })
      assert.deepStrictEqual(results.map((r) => r.id), scenarios.map((s) => s.id))
      const failed = results.filter((r) => r.status === "failed")
      assert.deepStrictEqual(failed.map((r) => r.id), ["mid_apply_failure_rolled_back", "crash_each_stage_repaired"])
      for (const r of failed) {
        const last = r.assertions[r.assertions.length - 1]!
        assert.strictEqual(last.name, "the scenario runs to completion")
        assert.match(last.detail ?? "", /^ScenarioError: Starting forkjoin (run|apply) failed: .*ENOENT/)
        // The workspace's path is scrubbed from details (they are part of the digest).
        assert.notInclude(last.detail ?? "", ws)
      }
      assert.deepStrictEqual(readTree(ws), before)
    }), 120_000)

  it.effect("a .forkjoin that is a symbolic link is refused: every scenario fails naming it, nothing is written through the link", () =>
    Effect.gen(function*() {
      const ws = userWorkspace()
      const elsewhere = userWorkspace()
      fs.symlinkSync(elsewhere, path.join(ws, ".forkjoin"))
      const before = readTree(ws)
      const outside = readTree(elsewhere)
      const results = yield* Probe.run({ workspace: ws, forkjoin: FORKJOIN })
      assert.deepStrictEqual(results.map((r) => [r.id, r.status]), scenarios.map((s) => [s.id, "failed"]))
      for (const r of results) {
        assert.deepStrictEqual(r.assertions, [{
          name: "the scenario's scratch workspace can be created",
          passed: false,
          detail: "'.forkjoin' is a symbolic link; the probe only writes to a real folder inside the workspace"
        }])
      }
      assert.deepStrictEqual(readTree(ws), before)
      assert.deepStrictEqual(readTree(elsewhere), outside)
    }))
})
