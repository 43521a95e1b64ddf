/**
 * Crash safety by real fault injection (SPEC §3, §4.5): `forkjoin apply` is SIGKILLed right
 * after each engine stage and after several renames (FORKJOIN_FAULT), 20 seeded workspaces
 * and patches each; then startup repair runs. Afterwards the whole tree is exactly the
 * pre-state or exactly the post-state, and history agrees: an applied record exists iff post,
 * and its after hashes are the files on disk.
 */
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { openWorkspace } from "@forkjoin/engine/Facade"
import { sealed } from "../support/fault.ts"
import { readRecords } from "../support/history.ts"
import { generateCase } from "../support/random.ts"
import { hashTree, projectRoot } from "../support/tree.ts"

const BIN = path.join(projectRoot, "packages/cli/bin/forkjoin.mjs")
const SEEDS = 20
const FAULTS = [
  ...Array.from({ length: 10 }, (_, i) => `stage:${i + 1}`),
  "commit:after-rename:1",
  "commit:after-rename:2",
  "commit:after-rename:3"
]

const dirs: Array<string> = []
afterAll(() => dirs.splice(0).forEach((d) => fs.rmSync(d, { recursive: true, force: true })))

const makeWs = (files: Record<string, string>): string => {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), "fj-crash-"))
  dirs.push(ws)
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true })
    fs.writeFileSync(path.join(ws, rel), text)
  }
  return ws
}

/** Tree hash without forkjoin's own state directory. */
const workspaceHash = (ws: string): string => {
  const state = path.join(ws, ".forkjoin")
  const aside = path.join(path.dirname(ws), `${path.basename(ws)}.state`)
  fs.renameSync(state, aside)
  try {
    return hashTree(ws)
  } finally {
    fs.renameSync(aside, state)
  }
}

const apply = (ws: string, patch: string, fault?: string) =>
  spawnSync(process.execPath, [BIN, "apply", "-", "--workspace", ws, "--json"], {
    input: patch,
    encoding: "utf8",
    env: sealed({ ...process.env, ...(fault === undefined ? {} : { FORKJOIN_FAULT: fault }) })
  })

// Reference post-state of each seed, from an uninterrupted apply. In this process: the reference
// is about the patch's result, not the process (a spawn per seed was a seventh of this file's time).
const reference = new Map<number, string>()
const postHash = async (seed: number): Promise<string> => {
  let h = reference.get(seed)
  if (h === undefined) {
    const { files, patch } = generateCase(seed)
    const ws = makeWs(files)
    const workspace = await openWorkspace(ws)
    try {
      await workspace.applyPatch(patch)
    } finally {
      await workspace.close()
    }
    h = workspaceHash(ws)
    reference.set(seed, h)
  }
  return h
}

const sha = (p: string) => `sha256:${createHash("sha256").update(fs.readFileSync(p)).digest("hex")}`

describe("crash at every stage and rename, then repair", () => {
  it.each(FAULTS)("FORKJOIN_FAULT=%s", async (fault) => {
    const outcomes = { pre: 0, post: 0 }
    for (let seed = 1; seed <= SEEDS; seed++) {
      const { files, patch } = generateCase(seed)
      const ws = makeWs(files)
      fs.mkdirSync(path.join(ws, ".forkjoin"))
      const pre = workspaceHash(ws)
      const run = apply(ws, patch, fault)
      // A rename fault past the plan's last rename never fires: the apply simply succeeds.
      if (run.signal !== "SIGKILL") {
        expect(fault.startsWith("commit:"), `seed ${seed}: the fault did not fire (${run.stderr})`).toBe(true)
        expect(run.status).toBe(0)
      }
      const workspace = await openWorkspace(ws) // startup repair
      await workspace.close()
      const after = workspaceHash(ws)
      const records = await readRecords(ws)
      if (after === pre) {
        outcomes.pre++
        expect(records, `seed ${seed}: pre-state but a record exists`).toEqual([])
      } else {
        expect(after, `seed ${seed}: neither pre nor post`).toBe(await postHash(seed))
        outcomes.post++
        expect(records.length, `seed ${seed}: post-state needs exactly one record`).toBe(1)
        const record = records[0]!
        expect(record.outcome).toBe("applied")
        expect(record.exactness).toBe("exact")
        for (const change of record.changes) {
          if (change.after !== undefined) expect(sha(path.join(ws, change.path))).toBe(change.after.hash)
          else expect(fs.existsSync(path.join(ws, change.path))).toBe(false)
        }
      }
    }
    // Up to stage 7 nothing is renamed: every run must come back as pre; from stage 8 on, as post.
    const stage = /^stage:(\d+)$/.exec(fault)
    if (stage !== null) {
      expect(Number(stage[1]) <= 7 ? outcomes.pre : outcomes.post).toBe(SEEDS)
    } else {
      // A crash between renames leaves a mix, which repair must restore to pre.
      expect(outcomes.pre).toBeGreaterThan(0)
    }
  })
})

describe("repair never invents an exact record", () => {
  it("a file that matches neither pre nor post after a crash: commit_state_uncertain, left alone", async () => {
    const { files, patch } = generateCase(7)
    const ws = makeWs(files)
    const run = apply(ws, patch, "commit:after-rename:1")
    expect(run.signal).toBe("SIGKILL")
    // Someone edits the file the first rename had replaced.
    const record0 = JSON.parse(
      spawnSync(process.execPath, [BIN, "apply", "-", "--workspace", makeWs(files), "--json"], { input: patch, encoding: "utf8" }).stdout
    ).record
    const touched = record0.changes[0].path as string
    fs.writeFileSync(path.join(ws, touched), "edited by someone else\n")
    const workspace = await openWorkspace(ws)
    await workspace.close()
    expect(fs.readFileSync(path.join(ws, touched), "utf8")).toBe("edited by someone else\n")
    const records = await readRecords(ws)
    expect(records.length).toBe(1)
    expect(records[0]).toMatchObject({ outcome: "commit_state_uncertain", exactness: "uncertain", provenance: "recovery" })
    expect(records[0]!.warnings.some((w) => w.code === "commit_state_uncertain" && w.path === touched)).toBe(true)
  })
})
