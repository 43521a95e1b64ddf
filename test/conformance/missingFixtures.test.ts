/**
 * A fresh clone has no `../shared`: the conformance suite then skips with a message saying how to
 * provide the fixtures, except in CI, where their absence fails the run.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { fixturePolicy, inCi } from "../support/fixtures.ts"
import { projectRoot } from "../support/tree.ts"

// The suite run by a nested vitest, its fixtures pointed at a folder that does not exist.
const runConformance = (ci: string | undefined) => {
  const missing = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "fj-nofix-")), "absent")
  const env: NodeJS.ProcessEnv = { ...process.env, FORKJOIN_CONFORMANCE_DIR: missing }
  delete env["CI"]
  if (ci !== undefined) env["CI"] = ci
  const run = spawnSync(
    process.execPath,
    [path.join(projectRoot, "node_modules/vitest/vitest.mjs"), "run", "--reporter=verbose", "test/conformance/codex-apply-patch.test.ts"],
    { cwd: projectRoot, env, encoding: "utf8" }
  )
  return { status: run.status, output: `${run.stdout}${run.stderr}`, missing }
}

describe("suites over shared fixtures", () => {
  it("decide run, fail in CI, skip elsewhere", () => {
    expect([fixturePolicy(true, true), fixturePolicy(true, false), fixturePolicy(false, true), fixturePolicy(false, false)])
      .toEqual(["run", "run", "fail", "skip"])
    expect([inCi({ CI: "true" }), inCi({ CI: "1" }), inCi({}), inCi({ CI: "" }), inCi({ CI: "false" }), inCi({ CI: "0" })])
      .toEqual([true, true, false, false, false, false])
  })

  it("outside CI, absent fixtures skip the suite and say how to provide them", () => {
    const r = runConformance(undefined)
    expect(r.status, r.output).toBe(0)
    expect(r.output).toContain(`shared fixtures are absent at ${r.missing}: set FORKJOIN_CONFORMANCE_DIR`)
    expect(r.output).toMatch(/1 skipped/)
  })

  it("in CI, absent fixtures fail the run", () => {
    const r = runConformance("true")
    expect(r.status, r.output).toBe(1)
    expect(r.output).toContain(`shared fixtures are absent at ${r.missing}`)
    expect(r.output).toMatch(/required in CI/)
  })
})
