/**
 * The probe catches a broken join (issue 11: "a test breaks the join on purpose"): the probe
 * runs in a child process with `FORKJOIN_FAULT=join:skip-baseline`, which makes the join take
 * a child's live files as its baseline. `baseline_drift_refused` must then be reported failed,
 * naming the assertions that broke, while scenarios the fault does not touch still pass.
 */
import { parseFault } from "@forkjoin/engine/Fault"
import type { ScenarioResult } from "@forkjoin/schema/Evidence"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bundle } from "../../test/support/bundle.ts"
import { sealed } from "../../test/support/fault.ts"
import { projectRoot } from "../../test/support/tree.ts"

const BIN = path.join(projectRoot, "packages/cli/bin/forkjoin.mjs")

const dirs: Array<string> = []
let entry: string
beforeAll(() => {
  entry = bundle("probes/test/support/probeMain.ts")
})
afterAll(() => {
  dirs.splice(0).forEach((d) => fs.rmSync(d, { recursive: true, force: true }))
  fs.rmSync(entry, { force: true })
})

/** Runs the probe in a child process with exactly `fault` as its sealed FORKJOIN_FAULT (none when undefined). */
const probeWith = (fault: string | undefined): ReadonlyArray<ScenarioResult> => {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), "fj-probe-broken-"))
  dirs.push(ws)
  const { FORKJOIN_FAULT: _inherited, ...env } = process.env
  const r = spawnSync(process.execPath, [entry, ws, process.execPath, BIN], {
    encoding: "utf8",
    env: sealed({ ...env, ...(fault === undefined ? {} : { FORKJOIN_FAULT: fault }) })
  })
  expect(r.status, r.stderr).toBe(0)
  return JSON.parse(r.stdout) as ReadonlyArray<ScenarioResult>
}

const byId = (results: ReadonlyArray<ScenarioResult>, id: string): ScenarioResult => {
  const r = results.find((x) => x.id === id)
  if (r === undefined) throw new Error(`no result for ${id}`)
  return r
}

describe("the probe against a join that skips baseline verification", () => {
  it("join:skip-baseline parses on its own and beside other faults; nothing else turns it on", () => {
    expect(parseFault("join:skip-baseline").skipBaseline).toBe(true)
    expect(parseFault("stage:3, join:skip-baseline").skipBaseline).toBe(true)
    expect(parseFault("stage:3").skipBaseline).toBe(false)
    expect(parseFault(undefined).skipBaseline).toBe(false)
    expect(() => parseFault("join:skip-baselines")).toThrow(/'join:skip-baselines' is not .*'join:skip-baseline'/)
  })

  it("reports baseline_drift_refused failed with the broken assertions named; disjoint_children_applied still passes", () => {
    const results = probeWith("join:skip-baseline")
    const drift = byId(results, "baseline_drift_refused")
    expect(drift.status).toBe("failed")
    const failed = drift.assertions.filter((a) => !a.passed)
    expect(failed.map((a) => a.name)).toEqual([
      "child b ends baseline_drift",
      "child b names shared.txt as drifted",
      "shared.txt keeps the outside edit byte-exact",
      "history has a record of child a only",
      "finish is refused"
    ])
    expect(failed[0]!.detail).toBe("expected \"baseline_drift\", got \"applied\"")
    expect(failed[2]!.detail).toBe("shared.txt: expected \"s1\\ns2 edited outside\\ns3\\n\", got \"s1\\nS2 by b\\ns3\\n\"")
    // The fault touches only the drift check: the rest of the join still behaves.
    expect(byId(results, "disjoint_children_applied").status).toBe("passed")
    expect(results.filter((r) => r.status === "failed").map((r) => r.id)).toEqual(["baseline_drift_refused"])
  }, 120_000)
})
