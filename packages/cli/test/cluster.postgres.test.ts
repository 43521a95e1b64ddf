/**
 * `forkjoin run --cluster postgres://...` against two `forkjoin runner` processes on a real
 * PostgreSQL server (a fresh database for the file): the same plan run locally and on the
 * runners gives the same workspace bytes, outcomes, conflicts, steps and history; `forkjoin
 * status` lists both runners. Without a server the suite is skipped with a message (fails in CI).
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase, withPostgres } from "../../../test/support/postgres.ts"
import { comparable, FILES, historyOf, PLAN, startRunner } from "./clusterHelpers.ts"
import { buildCli, json, makeSandbox, removeSandboxes, runCli, workspaceTree } from "./helpers.ts"
import { makeCase } from "./joinHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

withPostgres((server) => {
  let cluster = ""
  let addresses: ReadonlyArray<string> = []
  beforeAll(async () => {
    cluster = await Effect.runPromise(freshDatabase(server))
    const dir = makeSandbox().dir
    addresses = (await Promise.all([startRunner(cluster, dir), startRunner(cluster, dir)])).map((r) => r.address)
  }, 60_000)

  describe("forkjoin run --cluster on PostgreSQL", () => {
    it("gives what the local run gives, and status lists the runners", () => {
      const local = makeCase(FILES, PLAN)
      const remote = makeCase(FILES, PLAN)
      for (const c of [local, remote]) fs.chmodSync(path.join(c.ws, "scripts/run.sh"), 0o755)
      const here = runCli(["run", local.planFile, "--workspace", local.ws, "--json"])
      const there = runCli(["run", remote.planFile, "--workspace", remote.ws, "--cluster", cluster, "--json"])
      expect(there.status, there.stderr).toBe(here.status)
      const [h, t] = [json(here.stdout), json(there.stdout)]
      expect(workspaceTree(remote.ws)).toEqual(workspaceTree(local.ws))
      for (const key of ["mergeExecution", "conflicts", "results"]) expect(comparable(t[key], remote.ws)).toEqual(comparable(h[key], local.ws))
      expect(historyOf(remote.ws)).toEqual(historyOf(local.ws))
      for (const r of t.results) expect(addresses).toContain(r.ranOn)
      const listed = json(runCli(["status", "--workspace", remote.ws, "--cluster", cluster, "--json"]).stdout).cluster
      expect(listed.runners).toEqual([...addresses].sort())
      expect(listed.url).not.toContain(new URL(server).password)
    }, 120_000)
  })
})
