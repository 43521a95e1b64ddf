/**
 * A child's own check (`childVerify`), with real processes: it runs in a throwaway copy of the
 * workspace with the child's changes, never in the workspace; a check that does not pass fails
 * the attempt (retried up to `maxAttempts`) and exports nothing; the copy is always removed.
 * Each check script records what it saw in a file outside the workspace, read after the run.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { endHolders, holderCase } from "../../../test/support/verifyHolder.ts"
import * as Artifacts from "../src/Artifacts.ts"
import * as Children from "../src/Children.ts"
import { Driver } from "../src/Driver.ts"
import * as RunPlan from "../src/RunPlan.ts"
import { fingerprint, makeWorkspace, patchOf, removeSandboxes, run, valueOf } from "./helpers.ts"

const scratch: Array<string> = []
afterEach(endHolders)
afterAll(() => {
  removeSandboxes()
  for (const d of scratch.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})

/** A folder outside every workspace for check scripts and what they record. */
const tools = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "fj-childverify-tools-"))
  scratch.push(d)
  return d
}

/**
 * A check script: records `{ cwd, seen }` (each listed path's text, or null when absent) to
 * `record` (appending one line per run), scribbles over every listed file and adds one, then
 * exits with `exits[run]` (the last one past the end), printing `out`.
 */
const checkScript = (dir: string, options: { readonly look: ReadonlyArray<string>; readonly exits: ReadonlyArray<number>; readonly out: string }) => {
  const record = path.join(dir, "record.jsonl")
  const script = path.join(dir, "check.cjs")
  fs.writeFileSync(script, [
    "const fs = require('fs')",
    `const look = ${JSON.stringify(options.look)}`,
    `const exits = ${JSON.stringify(options.exits)}`,
    `const record = ${JSON.stringify(record)}`,
    "const runs = fs.existsSync(record) ? fs.readFileSync(record, 'utf8').split('\\n').filter(Boolean).length : 0",
    "const seen = Object.fromEntries(look.map((p) => [p, fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : null]))",
    "fs.appendFileSync(record, JSON.stringify({ cwd: process.cwd(), seen }) + '\\n')",
    "for (const p of look) if (fs.existsSync(p) && fs.statSync(p).isFile()) fs.writeFileSync(p, 'scribbled by the check\\n')",
    "fs.writeFileSync('made-by-check.txt', 'x')",
    `console.log(${JSON.stringify(options.out)})`,
    "process.exit(exits[Math.min(runs, exits.length - 1)])"
  ].join("\n"))
  const runs = (): Array<{ cwd: string; seen: Record<string, string | null> }> =>
    fs.existsSync(record) ? fs.readFileSync(record, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : []
  return { command: [process.execPath, script], runs }
}

/** A child that updates `a/f.txt`, deletes `a/gone.txt`, adds `a/new.txt` and moves `a/old-name.txt` with an edit. */
const editing = {
  id: "t",
  mode: "transactional_write",
  writeScope: ["a"],
  actions: [
    {
      apply_patch: {
        patch: patchOf(
          "*** Update File: a/f.txt",
          "@@",
          "-old",
          "+new",
          "*** Delete File: a/gone.txt",
          "*** Add File: a/new.txt",
          "+added",
          "*** Update File: a/old-name.txt",
          "*** Move to: a/new-name.txt",
          "@@",
          "-moving",
          "+moved"
        )
      }
    },
    { finish: {} }
  ]
}

const files = { "a/f.txt": "old\n", "a/gone.txt": "bye\n", "a/old-name.txt": "moving\n", "b/keep.txt": "kept\n" }
const looked = ["a/f.txt", "a/gone.txt", "a/new.txt", "a/old-name.txt", "a/new-name.txt", "b/keep.txt", ".forkjoin", "escape", "inner"]

const decode = (raw: unknown) => {
  const plan = RunPlan.decode(raw)
  if (Result.isFailure(plan)) throw plan.failure
  return plan.success
}

const runPlan = async (ws: string, plan: RunPlan.RunPlan, options: Partial<Children.RunOptions> = {}) =>
  valueOf(await run(ws, Children.runExportOnly(plan, { runId: "r", runDirectory: Artifacts.defaultRunDirectory(ws, "r"), ...options })))

describe("a task's childVerify", () => {
  it("a passing check sees the baseline with the child's changes in a copy outside the workspace, and the changeset is exported", async () => {
    const ws = makeWorkspace(files)
    const outside = tools()
    fs.writeFileSync(path.join(outside, "secret.txt"), "outside\n")
    // A link leading out of the workspace is left out of the copy; one staying inside is kept.
    fs.symlinkSync(path.join(outside, "secret.txt"), path.join(ws, "escape"))
    fs.symlinkSync("b/keep.txt", path.join(ws, "inner"))
    const before = fingerprint(ws)
    const check = checkScript(outside, { look: looked, exits: [0], out: "all good" })
    const r = await runPlan(ws, decode({ schemaVersion: 1, tasks: [{ ...editing, childVerify: { command: check.command, timeoutMs: 600_000 } }] }))
    const child = r.results[0]!
    expect(child).toMatchObject({ status: "finished", attempts: 1, childVerify: { status: "passed", attempt: 1, output: ["all good"] } })
    expect(child.changeset?.entries.map((e) => `${e.kind} ${e.path}`).sort()).toEqual(["add a/new.txt", "delete a/gone.txt", "move a/new-name.txt", "update a/f.txt"])
    expect(fs.existsSync(path.join(child.artifacts, "changeset.json"))).toBe(true)
    const [seen] = check.runs()
    expect(seen!.seen).toEqual({
      "a/f.txt": "new\n",
      "a/gone.txt": null,
      "a/new.txt": "added\n",
      "a/old-name.txt": null,
      "a/new-name.txt": "moved\n",
      "b/keep.txt": "kept\n",
      ".forkjoin": null,
      escape: null,
      inner: "kept\n"
    })
    // The check wrote only in its copy, which is gone; the workspace is byte for byte as before.
    expect(path.relative(ws, seen!.cwd).startsWith("..")).toBe(true)
    expect(fs.existsSync(seen!.cwd)).toBe(false)
    expect(fingerprint(ws)).toEqual(before)
    expect(fs.readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("outside\n")
    expect(fs.readFileSync(path.join(child.artifacts, "childVerify.log"), "utf8")).toMatch(/all good\n# the child's check passed\n$/)
  })

  it("a failing check fails every attempt up to maxAttempts, keeps its output and exports nothing", async () => {
    const ws = makeWorkspace(files)
    const before = fingerprint(ws)
    const check = checkScript(tools(), { look: ["a/f.txt"], exits: [3], out: "2 tests failed" })
    const r = await runPlan(ws, decode({ schemaVersion: 1, tasks: [{ ...editing, maxAttempts: 3, childVerify: { command: check.command, timeoutMs: 600_000 } }] }))
    const child = r.results[0]!
    expect(child).toMatchObject({ status: "check_failed", attempts: 3, childVerify: { status: "failed", attempt: 3, output: ["2 tests failed"] } })
    expect(child.childVerify?.summary).toContain("exit 3")
    expect(child.changeset).toBeUndefined()
    expect(fs.existsSync(path.join(child.artifacts, "changeset.json"))).toBe(false)
    expect(fs.existsSync(path.join(child.artifacts, "blobs"))).toBe(false)
    const runs = check.runs()
    expect(runs).toHaveLength(3)
    for (const one of runs) expect(fs.existsSync(one.cwd)).toBe(false)
    expect(fingerprint(ws)).toEqual(before)
  })

  it("an attempt whose check fails is retried, and the retry that passes exports", async () => {
    const ws = makeWorkspace(files)
    const check = checkScript(tools(), { look: ["a/f.txt"], exits: [1, 0], out: "ran" })
    const r = await runPlan(ws, decode({ schemaVersion: 1, tasks: [{ ...editing, maxAttempts: 2, childVerify: { command: check.command, timeoutMs: 600_000 } }] }))
    expect(r.results[0]).toMatchObject({ status: "finished", attempts: 2, childVerify: { status: "passed", attempt: 2 } })
    expect(r.results[0]!.changeset?.entries).toHaveLength(4)
    expect(check.runs().map((x) => x.seen["a/f.txt"])).toEqual(["new\n", "new\n"])
  })

  it("at the time limit the check's whole process group is killed, a grandchild holding its pipes too", async () => {
    const ws = makeWorkspace(files)
    const c = holderCase()
    const command = ["sh", "-c", "\"$0\" \"$1\" \"$2\" \"$3\" \"$4\" & exec \"$0\" -e \"setInterval(() => {}, 1e9)\"", ...c.holder]
    const r = await runPlan(ws, decode({ schemaVersion: 1, tasks: [{ ...editing, childVerify: { command, timeoutMs: 300 } }] }))
    expect(r.results[0]).toMatchObject({ status: "check_failed", childVerify: { status: "timed_out" } })
    expect(r.results[0]!.childVerify?.summary).toContain("timed out after 300 ms")
    expect(r.results[0]!.changeset).toBeUndefined()
    await c.holderGone()
  })

  it("a command that is not there fails the attempt saying it could not start", async () => {
    const ws = makeWorkspace(files)
    const r = await runPlan(ws, decode({ schemaVersion: 1, tasks: [{ ...editing, childVerify: { command: ["forkjoin-no-such-check"], timeoutMs: 600_000 } }] }))
    expect(r.results[0]).toMatchObject({ status: "check_failed", childVerify: { status: "not_started" } })
    expect(r.results[0]!.childVerify?.summary).toMatch(/'forkjoin-no-such-check' could not start \(spawn forkjoin-no-such-check ENOENT\); install it/)
  })

  it("a workspace changed under the child since it started fails the check as baseline_changed, naming the path", async () => {
    const ws = makeWorkspace(files)
    const check = checkScript(tools(), { look: ["a/f.txt"], exits: [0], out: "never" })
    const plan = decode({ schemaVersion: 1, tasks: [{ ...editing, childVerify: { command: check.command, timeoutMs: 600_000 } }] })
    const script = editing.actions
    // Someone edits a file the child changed while it works: its view cannot be rebuilt.
    const driverFor = () =>
      Driver.of({
        next: (steps) =>
          Effect.sync(() => {
            if (steps.length === 1) fs.writeFileSync(path.join(ws, "a/f.txt"), "edited meanwhile\n")
            return script[steps.length]
          })
      })
    const r = await runPlan(ws, plan, { driverFor })
    expect(r.results[0]).toMatchObject({ status: "check_failed", childVerify: { status: "baseline_changed" } })
    expect(r.results[0]!.childVerify?.summary).toContain("a/f.txt")
    expect(check.runs()).toHaveLength(0)
  })
})

describe("childVerify in a plan", () => {
  const at = (raw: unknown) => {
    const r = RunPlan.decode(raw)
    return Result.isFailure(r) ? r.failure : undefined
  }
  const childVerify = (command: ReadonlyArray<string>) => ({ command, timeoutMs: 1000 })

  it("refuses a command path leading out of the workspace, and a check on a task with nothing of its own to check", () => {
    for (const escape of ["../bin/check", "a/../../check", "./.."]) {
      expect(at({ schemaVersion: 1, tasks: [{ ...editing, childVerify: childVerify([escape]) }] })).toMatchObject({ path: "$.tasks[0].childVerify.command[0]" })
    }
    expect(at({ schemaVersion: 1, tasks: [{ id: "r", mode: "read_only", actions: [], childVerify: childVerify(["true"]) }] })).toMatchObject({ path: "$.tasks[0].childVerify" })
    expect(at({ schemaVersion: 1, tasks: [{ id: "c", mode: "transactional_write", writeScope: ["a"], changesetFile: "c.json", childVerify: childVerify(["true"]) }] }))
      .toMatchObject({ path: "$.tasks[0].childVerify" })
    expect(at({ schemaVersion: 1, tasks: [{ ...editing, childVerify: { command: [], timeoutMs: 1000 } }] })?.path).toMatch(/^\$\.tasks\[0\]\.childVerify/)
    for (const fine of ["npm", "/usr/bin/env", "./scripts/check.sh", "scripts/check.sh"]) {
      expect(at({ schemaVersion: 1, tasks: [{ ...editing, childVerify: childVerify([fine]) }] })).toBeUndefined()
    }
  })
})
