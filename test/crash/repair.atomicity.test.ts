/**
 * Issue 9 item 1, by real crashes: a multi-file `forkjoin apply` is SIGKILLed after its k-th
 * rename (FORKJOIN_FAULT=commit:after-rename:k), then files are edited by hand, then an
 * unrelated command runs the implicit startup repair. Every path whose bytes are exactly its
 * journalled pre- or post-image is back at its pre-image (the transaction never committed);
 * only the hand-edited paths are left alone, and the `commit_state_uncertain` record names
 * exactly them. The command that repaired says so on stderr (and `status --json` in its
 * `repairs` field); the uncertain outcome stays listed by `forkjoin repair` and `forkjoin
 * status` until `forkjoin repair --ack ID`, and the acknowledgement survives the process.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, findEntries, makeSandbox, patch, removeSandboxes, runCli, writeTree } from "../../packages/cli/test/helpers.ts"
import { readRecords } from "../support/history.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const FILES = 8
const RENAMES = 5

const pre = (i: number) => `file ${i}\nline two of ${i}\n`
const post = (i: number) => `file ${i}\nline two of ${i} (patched)\n`
const names = Array.from({ length: FILES }, (_, i) => `src/f${i}.txt`)

/** A workspace of FILES files and a patch updating every one of them (FILES renames). */
const crashedWorkspace = () => {
  const { ws } = makeSandbox()
  writeTree(ws, Object.fromEntries(names.map((n, i) => [n, pre(i)])))
  const body = names.flatMap((n, i) => [`*** Update File: ${n}`, "@@", ` file ${i}`, `-line two of ${i}`, `+line two of ${i} (patched)`])
  const run = runCli(["apply", "-", "--workspace", ws, "--json"], {
    stdin: patch(...body),
    env: { FORKJOIN_FAULT: `commit:after-rename:${RENAMES}` }
  })
  expect(run.signal, run.stderr).toBe("SIGKILL")
  const read = (n: string) => fs.readFileSync(path.join(ws, n), "utf8")
  const atPost = names.filter((n, i) => read(n) === post(i))
  const atPre = names.filter((n, i) => read(n) === pre(i))
  // The crash really left a mix: RENAMES files at their new content, the rest at the old.
  expect(atPost).toHaveLength(RENAMES)
  expect(atPre).toHaveLength(FILES - RENAMES)
  return { ws, read, atPost, atPre }
}

/** Edits one renamed file and one not yet renamed file by hand; returns their paths, sorted. */
const editByHand = (ws: string, atPost: ReadonlyArray<string>, atPre: ReadonlyArray<string>) => {
  const edited = [atPost[1]!, atPre[0]!].sort()
  for (const n of edited) fs.writeFileSync(path.join(ws, n), `hand edit of ${n}\n`)
  return edited
}

const jsonOf = (run: { readonly stdout: string; readonly stderr: string; readonly status: number | null }) => {
  expect(run.status, run.stderr + run.stdout).toBe(0)
  return JSON.parse(run.stdout)
}

describe("a crash mid-rename, then hand edits, then an unrelated apply", () => {
  it("restores every explained path to its pre-image, leaves the edits, names them, and says so", async () => {
    const { ws, read, atPost, atPre } = crashedWorkspace()
    const edited = editByHand(ws, atPost, atPre)

    const unrelated = runCli(["apply", "-", "--workspace", ws], { stdin: patch("*** Add File: other.txt", "+other") })
    expect(unrelated.status, unrelated.stderr).toBe(0)
    expect(unrelated.stdout).toContain("A other.txt")

    // Atomicity for every path that can be explained: all of them back at the pre-image.
    names.forEach((n, i) => {
      if (edited.includes(n)) expect(read(n), n).toBe(`hand edit of ${n}\n`)
      else expect(read(n), n).toBe(pre(i))
    })
    expect(read("other.txt")).toBe("other\n")
    expect(findEntries(ws, /\.fj-.*\.tmp$/)).toEqual([])

    // The record names exactly the unexplained paths.
    const records = await readRecords(ws)
    expect(records.map((r) => r.outcome)).toEqual(["commit_state_uncertain", "applied"])
    const uncertain = records[0]!
    expect(uncertain).toMatchObject({ exactness: "uncertain", provenance: "recovery" })
    expect(uncertain.warnings.filter((w) => w.code === "commit_state_uncertain").map((w) => w.path).sort()).toEqual(edited)

    // The apply that ran the repair said what it did, on stderr.
    expect(unrelated.stderr).toMatch(/repair/i)
    expect(unrelated.stderr).toContain(uncertain.transactionId)
    for (const n of edited) expect(unrelated.stderr).toContain(n)
    expect(unrelated.stderr).toContain(`forkjoin repair --workspace`)
    expect(unrelated.stderr).toContain(`--ack ${uncertain.recordId}`)

    // Listed by `repair` and `status` until acknowledged.
    const listed = jsonOf(runCli(["repair", "--workspace", ws, "--json"]))
    expect(listed.outcomes).toEqual([])
    expect(listed.uncertain.map((u: { recordId: string }) => u.recordId)).toEqual([uncertain.recordId])
    expect([...listed.uncertain[0].paths].sort()).toEqual(edited)
    const text = runCli(["repair", "--workspace", ws])
    expect(text.status).toBe(0)
    expect(text.stdout).not.toMatch(/Nothing to repair/)
    expect(text.stdout).toContain(uncertain.recordId)
    const status = jsonOf(runCli(["status", "--workspace", ws, "--json"]))
    expect(status.uncertainOutcomes.map((u: { recordId: string }) => u.recordId)).toEqual([uncertain.recordId])
    const statusText = runCli(["status", "--workspace", ws])
    expect(statusText.stdout).toContain(uncertain.recordId)
    expect(statusText.stdout).not.toMatch(/Nothing needs attention/)

    // Acknowledged (by its transaction id here), durably: later processes list nothing.
    const ack = jsonOf(runCli(["repair", "--workspace", ws, "--ack", uncertain.transactionId, "--json"]))
    expect(ack.acknowledged.recordId).toBe(uncertain.recordId)
    expect(ack.uncertain).toBeUndefined()
    expect(jsonOf(runCli(["status", "--workspace", ws, "--json"])).uncertainOutcomes).toEqual([])
    expect(runCli(["repair", "--workspace", ws]).stdout).toMatch(/Nothing to repair/)
    // The files were never touched by any of that.
    for (const n of edited) expect(read(n)).toBe(`hand edit of ${n}\n`)
  })

  it("status is the command that repairs: its --json carries a repairs field, its stderr the notice", () => {
    const { ws, atPost, atPre } = crashedWorkspace()
    const edited = editByHand(ws, atPost, atPre)
    const run = runCli(["status", "--workspace", ws, "--json"])
    const status = jsonOf(run)
    expect(status.repairs).toHaveLength(1)
    expect(status.repairs[0]).toMatchObject({ action: "uncertain" })
    expect([...status.repairs[0].unexplained].sort()).toEqual(edited)
    expect(status.repairs[0].restored).toHaveLength(RENAMES - 1)
    expect(run.stderr).toMatch(/repair/i)
    expect(status.uncertainOutcomes).toHaveLength(1)
  })

  it("without hand edits the crash is simply undone, and the apply that repaired says so", () => {
    const { ws, read } = crashedWorkspace()
    const run = runCli(["apply", "-", "--workspace", ws, "--json"], { stdin: patch("*** Add File: other.txt", "+other") })
    expect(jsonOf(run).ok).toBe(true)
    names.forEach((n, i) => expect(read(n), n).toBe(pre(i)))
    expect(run.stderr).toMatch(/restored/)
    expect(jsonOf(runCli(["status", "--workspace", ws, "--json"])).uncertainOutcomes).toEqual([])
  })

  it("an unknown id is refused by --ack and changes nothing", () => {
    const { ws, atPost, atPre } = crashedWorkspace()
    editByHand(ws, atPost, atPre)
    const run = runCli(["repair", "--workspace", ws, "--ack", "rec-nope", "--json"])
    expect(run.status).toBe(1)
    expect(JSON.parse(run.stdout).ok).toBe(false)
    expect(jsonOf(runCli(["status", "--workspace", ws, "--json"])).uncertainOutcomes).toHaveLength(1)
  })
})
