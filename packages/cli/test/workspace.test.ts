/**
 * Which workspace a command works on, through the built CLI: the workspace's identity survives
 * moving its folder (history, conflicts and runs come along; the move is said once), a copy beside
 * its original gets its own identity, a workspace written by the previous version keeps its id;
 * without --workspace the nearest enclosing workspace (else the git root) is used, and a folder
 * inside a workspace means that workspace; ids follow one rule, refused as request_invalid.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, defaultDb, makeSandbox, patch, readHistory, removeSandboxes, runCli, snapshotTree, writeTree } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const MOVED = /workspace moved from .* to .*; its history came along/

const editTask = (id: string) => ({
  id,
  mode: "transactional_write",
  writeScope: ["src/a"],
  maxAttempts: 1,
  timeoutMs: 60000,
  actions: [{ apply_patch: { patch: patch("*** Update File: src/a/x.ts", "@@", "-x", `+${id}`) } }, { finish: {} }]
})

/** A workspace with one open conflict (two children edited one line) and one applied patch. */
const workspaceWithConflict = () => {
  const { dir, ws } = makeSandbox()
  writeTree(ws, { "src/a/x.ts": "x\n", "README.md": "r\n" })
  const planFile = path.join(dir, "plan.json")
  fs.writeFileSync(planFile, JSON.stringify({ schemaVersion: 1, tasks: [editTask("one"), editTask("two")] }))
  const run = JSON.parse(runCli(["run", planFile, "--workspace", ws, "--json"]).stdout)
  const applied = runCli(["apply", "--workspace", ws, "--json"], { stdin: patch("*** Add File: b.txt", "+b") })
  expect(applied.status).toBe(0)
  const conflictId = `${run.runId}/two:src/a/x.ts`
  const { commitOrdinal, environmentId } = JSON.parse(applied.stdout).record
  return { dir, ws, runId: run.runId as string, conflictId, environmentId: environmentId as string, ordinal: commitOrdinal as number }
}

const statusJson = (ws: string) => {
  const r = runCli(["status", "--workspace", ws, "--json"])
  expect(r.status).toBe(0)
  return { json: JSON.parse(r.stdout), stderr: r.stderr }
}

const identityOf = (ws: string) => JSON.parse(fs.readFileSync(path.join(ws, ".forkjoin", "identity.json"), "utf8"))

describe("a moved workspace keeps its history", () => {
  it("after mv, conflicts, status and history still see everything; the move is reported once", () => {
    const { conflictId, dir, environmentId, ordinal, ws } = workspaceWithConflict()
    const moved = path.join(dir, "ws2")
    fs.renameSync(ws, moved)

    const first = statusJson(moved)
    expect(first.json.openConflicts.map((c: { conflictId: string }) => c.conflictId)).toEqual([conflictId])
    expect(first.stderr).toMatch(MOVED)
    expect(first.stderr).toContain(`from ${ws} to ${moved}`)
    expect(first.json.moved).toEqual({ from: ws, to: moved })
    // Only once: identity.json now records the new path.
    expect(identityOf(moved)).toMatchObject({ schemaVersion: 2, environmentId, root: moved })
    const second = statusJson(moved)
    expect(second.stderr).not.toMatch(MOVED)
    expect(second.json.moved).toBeUndefined()

    // Text output shortens the run id's UUID to its first 8 characters.
    const shortId = conflictId.replace(/^(run-[0-9a-f]{8})[0-9a-f-]{28}/, "$1")
    const conflicts = runCli(["conflicts", "--workspace", moved])
    expect(conflicts.status).toBe(0)
    expect(conflicts.stdout).toContain(shortId)
    const text = runCli(["status", "--workspace", moved])
    expect(text.stdout).toContain(`open conflict: forkjoin resolve '${shortId}'`)
    expect(text.stdout).not.toContain("Nothing needs attention")

    const timeline = JSON.parse(runCli(["history", "timeline", "--workspace", moved, "--json"]).stdout)
    expect(timeline.items.map((r: { changes: Array<{ path: string }> }) => r.changes[0]!.path)).toContain("b.txt")
    // A later apply is recorded in the same environment, after the earlier records.
    const later = runCli(["apply", "--workspace", moved, "--json"], { stdin: patch("*** Add File: c.txt", "+c") })
    expect(JSON.parse(later.stdout).record).toMatchObject({ environmentId, commitOrdinal: ordinal + 1 })
    expect(later.stderr).not.toMatch(MOVED)
    // An edit made outside forkjoin after the move is found as a gap by the next write of the file.
    fs.appendFileSync(path.join(moved, "b.txt"), "by hand\n")
    const edited = runCli(["apply", "--workspace", moved, "--json"], { stdin: patch("*** Update File: b.txt", "@@", " b", "+more") })
    expect(edited.status).toBe(0)
    const after = JSON.parse(runCli(["history", "timeline", "--workspace", moved, "--json"]).stdout)
    expect(after.coverage).toMatchObject({ gaps: 1 })
    expect(after.items.some((r: { transactionId: string }) => r.transactionId.startsWith("gap:"))).toBe(true)
  })

  it("the move is reported by whichever command opens the workspace first", () => {
    const { dir, ws } = workspaceWithConflict()
    const moved = path.join(dir, "renamed")
    fs.renameSync(ws, moved)
    const r = runCli(["conflicts", "--workspace", moved, "--json"])
    expect(r.stderr).toMatch(MOVED)
    expect(JSON.parse(r.stdout).conflicts).toHaveLength(1)
    expect(statusJson(moved).json.moved).toBeUndefined()
  })

  it("a copy beside its original starts a history of its own; the original keeps its history and conflicts", () => {
    const { conflictId, dir, environmentId, ws } = workspaceWithConflict()
    const copy = path.join(dir, "ws3")
    fs.cpSync(ws, copy, { recursive: true })
    const opened = statusJson(copy)
    expect(opened.stderr).toContain(`is a copy of ${ws}`)
    expect(opened.json.copiedFrom).toBe(ws)
    expect(opened.json.openConflicts).toEqual([])
    const applied = JSON.parse(runCli(["apply", "--workspace", copy, "--json"], { stdin: patch("*** Add File: c.txt", "+c") }).stdout)
    expect(applied.record.environmentId).not.toBe(environmentId)
    // The original is untouched by the copy: same id, same conflict, nothing reported.
    const original = statusJson(ws)
    expect(original.stderr).toBe("")
    expect(original.json.openConflicts.map((c: { conflictId: string }) => c.conflictId)).toEqual([conflictId])
    expect(identityOf(ws)).toMatchObject({ environmentId, root: ws })
    expect(readHistory(defaultDb(ws)).records).toMatchObject([{ environmentId }, { environmentId }])
  })

  it("a workspace written by the previous version (identity.json without environmentId) keeps its id, also once moved", () => {
    const { dir, ws } = makeSandbox()
    const first = JSON.parse(runCli(["apply", "--workspace", ws, "--json"], { stdin: patch("*** Add File: a.txt", "+a") }).stdout)
    const { histories } = identityOf(ws)
    fs.writeFileSync(path.join(ws, ".forkjoin", "identity.json"), JSON.stringify({ schemaVersion: 1, histories }))
    const second = runCli(["apply", "--workspace", ws, "--json"], { stdin: patch("*** Add File: b.txt", "+b") })
    expect(second.status).toBe(0)
    expect(second.stderr).toBe("")
    expect(JSON.parse(second.stdout).record).toMatchObject({ environmentId: first.record.environmentId, commitOrdinal: 2 })
    expect(identityOf(ws)).toMatchObject({ schemaVersion: 2, environmentId: first.record.environmentId, root: ws })
    const moved = path.join(dir, "later")
    fs.renameSync(ws, moved)
    const third = runCli(["apply", "--workspace", moved, "--json"], { stdin: patch("*** Add File: c.txt", "+c") })
    expect(JSON.parse(third.stdout).record).toMatchObject({ environmentId: first.record.environmentId, commitOrdinal: 3 })
    expect(third.stderr).toMatch(MOVED)
  })
})

describe("the workspace a command works on", () => {
  it("without --workspace, from a subfolder: apply writes into the enclosing workspace, no nested .forkjoin", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "src/keep.txt": "k\n" })
    expect(runCli(["apply", "--workspace", ws], { stdin: patch("*** Add File: first.txt", "+1") }).status).toBe(0)
    const src = path.join(ws, "src")
    const r = runCli(["apply", "--json"], { cwd: src, stdin: patch("*** Add File: second.txt", "+2") })
    expect(r.status).toBe(0)
    expect(fs.readFileSync(path.join(ws, "second.txt"), "utf8")).toBe("2\n")
    expect(fs.existsSync(path.join(src, ".forkjoin"))).toBe(false)
    expect(fs.existsSync(path.join(src, "second.txt"))).toBe(false)
    expect(readHistory(defaultDb(ws)).records).toHaveLength(2)
  })

  it("status from a subfolder finds the workspace and what needs attention", () => {
    const { conflictId, ws } = workspaceWithConflict()
    const r = runCli(["status", "--json"], { cwd: path.join(ws, "src", "a") })
    expect(r.status).toBe(0)
    expect(JSON.parse(r.stdout).openConflicts.map((c: { conflictId: string }) => c.conflictId)).toEqual([conflictId])
    expect(fs.existsSync(path.join(ws, "src", "a", ".forkjoin"))).toBe(false)
  })

  it("an explicit --workspace inside a workspace means that workspace, and says so", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "src/keep.txt": "k\n" })
    expect(runCli(["apply", "--workspace", ws], { stdin: patch("*** Add File: first.txt", "+1") }).status).toBe(0)
    const r = runCli(["apply", "--workspace", ".", "--json"], { cwd: path.join(ws, "src"), stdin: patch("*** Add File: second.txt", "+2") })
    expect(r.status).toBe(0)
    expect(r.stderr).toContain(`'.' is inside the workspace '${ws}'; using that workspace`)
    expect(fs.existsSync(path.join(ws, "src", ".forkjoin"))).toBe(false)
    expect(fs.readFileSync(path.join(ws, "second.txt"), "utf8")).toBe("2\n")
  })

  it("a folder inside a workspace's .forkjoin (a scratch workspace, like the probe's) is its own workspace", () => {
    const { ws } = makeSandbox()
    expect(runCli(["apply", "--workspace", ws], { stdin: patch("*** Add File: first.txt", "+1") }).status).toBe(0)
    const scratch = path.join(ws, ".forkjoin", "scratch", "one")
    fs.mkdirSync(scratch, { recursive: true })
    const r = runCli(["apply", "--workspace", scratch, "--json"], { stdin: patch("*** Add File: s.txt", "+s") })
    expect(r.status).toBe(0)
    expect(r.stderr).not.toContain("is inside the workspace")
    expect(fs.readFileSync(path.join(scratch, "s.txt"), "utf8")).toBe("s\n")
    expect(fs.existsSync(path.join(ws, "s.txt"))).toBe(false)
    // Run from inside it without --workspace: the same.
    const here = runCli(["apply", "--json"], { cwd: scratch, stdin: patch("*** Add File: t.txt", "+t") })
    expect(here.status).toBe(0)
    expect(fs.existsSync(path.join(scratch, "t.txt"))).toBe(true)
    expect(fs.existsSync(path.join(ws, "t.txt"))).toBe(false)
  })

  it("in a git repository without .forkjoin, the git root is the workspace", () => {
    const { dir } = makeSandbox()
    const repo = path.join(dir, "repo")
    fs.mkdirSync(path.join(repo, ".git"), { recursive: true })
    fs.mkdirSync(path.join(repo, "pkg", "src"), { recursive: true })
    const r = runCli(["apply", "--json"], { cwd: path.join(repo, "pkg", "src"), stdin: patch("*** Add File: top.txt", "+t") })
    expect(r.status).toBe(0)
    expect(fs.readFileSync(path.join(repo, "top.txt"), "utf8")).toBe("t\n")
    expect(fs.existsSync(path.join(repo, ".forkjoin", "history.db"))).toBe(true)
    expect(fs.existsSync(path.join(repo, "pkg", "src", ".forkjoin"))).toBe(false)
  })

  it("outside any workspace or repository, the current folder is the workspace", () => {
    const { outside } = makeSandbox()
    const r = runCli(["apply", "--json"], { cwd: outside, stdin: patch("*** Add File: here.txt", "+h") })
    expect(r.status).toBe(0)
    expect(fs.readFileSync(path.join(outside, "here.txt"), "utf8")).toBe("h\n")
  })
})

describe("ids follow one rule", () => {
  const { ws } = makeSandbox()
  const add = patch("*** Add File: x.txt", "+x")

  it.each([
    ["../x", "it has a \"..\" segment"],
    ["", "it is empty"],
    ["a//b", "it has an empty segment"],
    ["a/./b", "it has a \".\" segment"],
    ["x".repeat(257), "it has 257 characters"],
    ["caf\u00e9", "it contains \"\u00e9\""],
    ["a b", "it contains \" \""]
  ])("--thread %j is refused as request_invalid, naming the id and the rule", (id, problem) => {
    for (const flag of ["--thread", "--turn"]) {
      const r = runCli(["apply", "--workspace", ws, flag, id, "--json"], { stdin: add })
      expect(r.status).toBe(2)
      // With --json the refusal is the one JSON line on stdout.
      expect(r.stderr).toBe("")
      const { error } = JSON.parse(r.stdout)
      expect(error.code).toBe("request_invalid")
      expect(error.message).toContain(`the id ${JSON.stringify(id)} is refused (${problem})`)
      expect(error.message).toContain("ids are 1-256 characters of letters, digits and _ . - : /")
    }
    expect(snapshotTree(ws)).toEqual({})
  })

  it("a valid id with slashes, colons and dots is accepted and recorded", () => {
    const r = runCli(["apply", "--workspace", ws, "--thread", "parent/child-1:turn.2", "--turn", "t.1:2/3", "--json"], { stdin: add })
    expect(r.status).toBe(0)
    expect(JSON.parse(r.stdout).record).toMatchObject({ threadId: "parent/child-1:turn.2", turnId: "t.1:2/3" })
  })
})
