/**
 * `forkjoin run --cluster postgres://...` against two `forkjoin runner` processes on a real
 * PostgreSQL server (a fresh database for the file): the same plan run locally and on the
 * runners gives the same workspace bytes, outcomes, conflicts, steps and history; `forkjoin
 * status` lists both runners. Without a server the suite is skipped with a message (fails in CI).
 */
import * as Effect from "effect/Effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase, withPostgres } from "../../../test/support/postgres.ts"
import { expectSameAsLocal, startRunner } from "./clusterHelpers.ts"
import { buildCli, json, makeSandbox, removeSandboxes, runCli } from "./helpers.ts"

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
      const { remote, there: t } = expectSameAsLocal(cluster)
      for (const r of t.results) expect(addresses).toContain(r.ranOn)
      const listed = json(runCli(["status", "--workspace", remote.ws, "--cluster", cluster, "--json"]).stdout).cluster
      expect(listed.runners).toEqual([...addresses].sort())
      expect(listed.url).not.toContain(new URL(server).password)
    }, 120_000)
  })
})
