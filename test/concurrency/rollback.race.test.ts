/**
 * The last two conflicts of a held rollback resolved by two real `forkjoin resolve` processes
 * at once. A preloaded hook holds each process right after it read the rollback's conflicts
 * (so each has seen the other's still open) until both got there, then lets them go together.
 * Every round exactly one of them applies the whole rollback, once: one says it applied it
 * (`rollback:<id>`, none left open), the other that it waits for one more; history holds one
 * `rollback:<id>` record with both resolutions in it, and resolving either again adds none.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, makeSandbox, removeSandboxes, writeTree } from "../../packages/cli/test/helpers.ts"
import { cliJson, recordsOf, textAt } from "../../packages/cli/test/joinHelpers.ts"
import { apply, at, TEN } from "../../packages/cli/test/rollbackHelpers.ts"
import { type HoldPoint, startHeld, writeHoldHook } from "../support/statementHold.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const ROUNDS = 4

// Each resolve is held once it has read the held rollbacks' conflicts (both still open).
const AFTER_READING: HoldPoint = {
  method: "all",
  source: /FROM merge_conflicts WHERE environment_id = \? AND run_id IS NULL ORDER BY/,
  after: true,
  reached: "forkjoin-test: read the rollback's conflicts\n"
}


describe("the last two conflicts of a held rollback resolved at once", () => {
  it(`${ROUNDS} rounds of two resolves held together after reading both open: exactly one applies the rollback, once`, async () => {
    const { dir: hookDir } = makeSandbox()
    const hook = path.join(hookDir, "hold.cjs")
    writeHoldHook(hook, AFTER_READING)
    let together = 0
    for (let round = 0; round < ROUNDS; round++) {
      const { dir, ws } = makeSandbox()
      writeTree(ws, { "f.txt": TEN, "h.txt": TEN })
      const first = apply(ws, "*** Update File: f.txt", "@@", " 1", "-2", "+two", "*** Update File: h.txt", "@@", " 1", "-2", "+two")
      const later = apply(ws, "*** Update File: f.txt", "@@", " 1", "-two", "+F", "*** Update File: h.txt", "@@", " 1", "-two", "+H", "@@", " 6", "-7", "+seven")
      const ids = [`rollback:${first}:f.txt`, `rollback:${first}:h.txt`]
      expect(cliJson(["rollback", first, "--workspace", ws]).json.error.conflictIds).toEqual(ids)

      const resolves = ids.map((id, k) => startHeld(dir, k, hook, AFTER_READING, ["resolve", id, "--apply", "--workspace", ws, "--json"]))
      // Both held at once after their read, or (never expected) one ended while the other is held.
      const states = await Promise.all(resolves.map((r) => Promise.race([r.reached.then(() => "held"), r.ended.then(() => "ended")])))
      if (states.every((s) => s === "held")) together++
      await Promise.all(resolves.map((r) => r.release()))
      const results = await Promise.all(resolves.map((r) => r.ended))
      const when = `round ${round}: ${JSON.stringify(results)}`
      expect(results.map((r) => r.code), when).toEqual([0, 0])

      const outs = results.map((r) => JSON.parse(r.stdout))
      const appliers = outs.filter((o) => o.transactionId !== undefined)
      expect(appliers, when).toEqual([{ ok: true, transactionId: `rollback:${first}`, rollbackOf: first, openConflicts: 0 }])
      expect(outs.filter((o) => o.transactionId === undefined), when).toEqual([{ ok: true, rollbackOf: first, openConflicts: 1 }])

      // One rollback record, both resolutions in it: line 2 back in both files, the later line 7 kept.
      const records = recordsOf(ws)
      expect(records.map((x) => x.transactionId), when).toEqual([first, later, `rollback:${first}`])
      expect(records[2]!.changes.map((c) => c.path).sort()).toEqual(["f.txt", "h.txt"])
      expect(textAt(ws, "f.txt")).toBe(TEN)
      expect(textAt(ws, "h.txt")).toBe(at(TEN, 7, "seven"))
      expect(cliJson(["conflicts", "--workspace", ws]).json.conflicts.map((c: any) => [c.conflictId, c.status])).toEqual([
        [ids[0], "resolved"],
        [ids[1], "resolved"]
      ])
      // Resolving either again finds the rollback applied since it was held: nothing is applied twice.
      for (const id of ids) expect(cliJson(["resolve", id, "--apply", "--workspace", ws]).json.error.code).toBe("conflict_already_resolved")
      expect(recordsOf(ws)).toHaveLength(3)
      fs.rmSync(dir, { recursive: true, force: true })
    }
    // Both were held together every round: each read the other's conflict open before either recorded.
    expect(together).toBe(ROUNDS)
  })
})
