/**
 * `forkjoin resolve --apply` and `forkjoin resolve --discard` of one conflict, run as two real
 * processes at once, over and over until both got past reading the open conflict (the loser is
 * refused at the claim, "another resolve closed it first"). Every time exactly one wins, the
 * loser writes nothing (`conflict_already_resolved`), and the file, the conflict and the child
 * all say what the winner did. And an apply whose write then fails (held by a hook before the
 * workspace lock while its file changes and a discard runs to the end): the conflict is never
 * shown resolved meanwhile, so the discard wins, and the apply writes nothing.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, removeSandboxes, runCliAsync } from "../../packages/cli/test/helpers.ts"
import { cliJson, editTask, makeCase, outcomeOf, planOf, recordsOf, runJoin, textAt } from "../../packages/cli/test/joinHelpers.ts"
import { startHeld } from "../support/lockHold.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const CONFLICTS = 6
const ROUNDS = 4

const file = (line2: string) => `line1\n${line2}\nline3\n`
const fileOf = (i: number) => `m/f${i}.txt`

/** One join holding CONFLICTS conflicts, one per child b<i> on m/f<i>.txt (a edited each first). */
const heldConflicts = () => {
  const files: Record<string, string> = {}
  for (let i = 0; i < CONFLICTS; i++) files[fileOf(i)] = file("line2")
  const a = editTask("a", ["m"], Array.from({ length: CONFLICTS }, (_, i) => ["*** Update File: " + fileOf(i), "@@", "-line2", "+A2"]).flat())
  const bs = Array.from({ length: CONFLICTS }, (_, i) => editTask(`b${i}`, ["m"], ["*** Update File: " + fileOf(i), "@@", "-line2", `+B${i}`]))
  const j = makeCase(files, planOf([a, ...bs]))
  const { out } = runJoin(j)
  for (let i = 0; i < CONFLICTS; i++) expect(outcomeOf(out, `b${i}`)).toMatchObject({ status: "conflicted_unresolved" })
  return { j, runId: out.runId }
}

const lineOf = (stdout: string) => JSON.parse(stdout)

describe("racing resolutions of one conflict", () => {
  it("apply against discard: one wins, the loser writes nothing, file, conflict and child agree", async () => {
    let raced = 0
    for (let round = 0; round < ROUNDS && raced === 0; round++) {
      const { j, runId } = heldConflicts()
      for (let i = 0; i < CONFLICTS; i++) {
        const conflictId = `${runId}/b${i}:${fileOf(i)}`
        const [apply, discard] = await Promise.all([
          runCliAsync(["resolve", conflictId, "--apply", "--workspace", j.ws, "--json"], {}),
          runCliAsync(["resolve", conflictId, "--discard", "--workspace", j.ws, "--json"], {})
        ])
        const results = [{ kind: "apply", r: apply }, { kind: "discard", r: discard }]
        const winners = results.filter((x) => x.r.status === 0)
        expect(winners.map((w) => w.kind), `${apply.stdout}${apply.stderr}\n${discard.stdout}${discard.stderr}`).toHaveLength(1)
        const winner = winners[0]!.kind
        const loser = results.find((x) => x.r.status !== 0)!
        const refused = lineOf(loser.r.stdout)
        expect(refused.error.code).toBe("conflict_already_resolved")
        if (String(refused.error.message).includes("another resolve closed it first")) raced++

        const listed = cliJson(["conflicts", "--workspace", j.ws]).json
        const stored = listed.conflicts.find((c: { conflictId: string }) => c.conflictId === conflictId)
        expect(stored?.status).toBe("resolved")
        expect(textAt(j.ws, fileOf(i))).toBe(file(winner === "apply" ? `B${i}` : "A2"))
        const child = lineOf(winners[0]!.r.stdout).outcome
        expect(child).toMatchObject({ childId: `b${i}`, status: winner === "apply" ? "resolved" : "discarded" })
      }
      fs.rmSync(path.dirname(j.ws), { recursive: true, force: true })
    }
    // Both processes read the conflict open at least once: the claim decided, not the first read.
    expect(raced).toBeGreaterThan(0)
  })

  it("an apply that fails after deciding: a resolve meanwhile is not refused, and only one resolution lands", async () => {
    const { j, runId } = heldConflicts()
    const conflictId = `${runId}/b0:${fileOf(0)}`
    // Held before its write's lock (1 is the startup repair): it has planned against the live file.
    const apply = startHeld(j.dir, ["resolve", conflictId, "--apply", "--workspace", j.ws, "--json"], 2)
    await Promise.race([apply.reached, apply.ended])
    // Someone edits the file, so the held apply's write can only fail; a discard runs meanwhile.
    fs.writeFileSync(path.join(j.ws, fileOf(0)), file("hand"))
    const discard = cliJson(["resolve", conflictId, "--discard", "--workspace", j.ws])
    await apply.release()
    const applied = await apply.ended
    expect(discard.status, JSON.stringify(discard.json)).toBe(0)
    expect(discard.json.outcome).toMatchObject({ childId: "b0", status: "discarded" })
    expect(applied.code).toBe(1)
    expect(lineOf(applied.stdout).error.code).toBe("conflict_already_resolved")
    const stored = cliJson(["conflicts", "--workspace", j.ws]).json.conflicts.find((c: { conflictId: string }) => c.conflictId === conflictId)
    expect(stored).toMatchObject({ status: "resolved" })
    expect(textAt(j.ws, fileOf(0))).toBe(file("hand"))
    expect(recordsOf(j.ws).filter((r) => r.transactionId === `conflict_resolution:${conflictId}`)).toEqual([])
  })
})
