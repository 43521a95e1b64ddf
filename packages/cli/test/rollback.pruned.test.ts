/**
 * Rollback of a transaction whose earlier content retention dropped (`gc
 * --prune-snapshots-older-than`), through the built bundle: refused as `rollback_unavailable`
 * (the content is gone for good), not `store_unavailable` (which asks to check the database and
 * retry), with the file untouched.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, expect, it } from "vitest"
import { buildCli, makeSandbox, patch, removeSandboxes, runCli } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

it("a rollback needing pruned content is rollback_unavailable, nothing written", () => {
  const { ws } = makeSandbox()
  fs.writeFileSync(path.join(ws, "a.txt"), "a1\na2\n")
  for (const [from, to] of [["a1", "A1"], ["a2", "A2"]] as const) {
    const r = runCli(["apply", "--workspace", ws, "--json"], { stdin: patch("*** Update File: a.txt", "@@", `-${from}`, `+${to}`) })
    expect(r.status, r.stderr).toBe(0)
  }
  const gc = runCli(["gc", "--workspace", ws, "--prune-snapshots-older-than", "0s", "--json"])
  expect(gc.status, gc.stderr).toBe(0)
  expect(JSON.parse(gc.stdout).snapshots.snapshotsPruned).toBeGreaterThan(0)
  const r = runCli(["rollback", "#1", "--workspace", ws, "--json"])
  expect(r.status).toBe(1)
  const error = JSON.parse(r.stdout).error
  expect(error.code).toBe("rollback_unavailable")
  expect(error.message).toMatch(/dropped by retention/)
  expect(error.message).not.toMatch(/Check the history database/)
  expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("A1\nA2\n")
})
