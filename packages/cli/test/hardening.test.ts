/**
 * Hardening through the built CLI (issue 9 items 3–6 and the state folder's `.gitignore`): a
 * `.forkjoin` link is refused and nothing lands where it points, nested `.git` is denied,
 * `history export-git` never turns a folder of files into a git directory, plans with glob or
 * reserved write scopes exit 2, and `.forkjoin/` stays out of `git status`.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, json, makeSandbox, patch, removeSandboxes, runCli, snapshotTree, workspaceTree, writeTree } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const git = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", HOME: cwd } })

const applyOk = (ws: string, text: string, ...args: Array<string>) => {
  const r = runCli(["apply", "--workspace", ws, "--json", ...args], { stdin: text })
  expect(r.status, r.stderr).toBe(0)
  return json(r.stdout)
}

describe("a .forkjoin symbolic link is refused (item 3)", () => {
  it("apply, repair and run --export-only refuse it with path_denied_by_policy; nothing is created where it points", () => {
    const { dir, outside, ws } = makeSandbox()
    writeTree(ws, { "a.txt": "a\n" })
    fs.symlinkSync(outside, path.join(ws, ".forkjoin"))
    const planFile = path.join(dir, "plan.json")
    fs.writeFileSync(planFile, JSON.stringify({
      schemaVersion: 1,
      tasks: [{ id: "t", mode: "transactional_write", writeScope: ["a.txt"], actions: [{ finish: {} }] }]
    }))
    const before = snapshotTree(ws)
    for (
      const args of [
        ["apply", "--workspace", ws, "--json"],
        ["repair", "--workspace", ws, "--json"],
        ["run", planFile, "--export-only", "--workspace", ws, "--json"]
      ]
    ) {
      const r = runCli(args, { stdin: patch("*** Add File: b.txt", "+b") })
      expect(r.status, `${args[0]}: ${r.stderr}`).toBe(1)
      expect(json(r.stdout).error).toMatchObject({ code: "path_denied_by_policy", paths: [".forkjoin"] })
      expect(json(r.stdout).error.message).toMatch(/symbolic link.*real folder/)
      expect(fs.readdirSync(outside), args[0]).toEqual([])
      expect(snapshotTree(ws)).toEqual(before)
    }
    const human = runCli(["apply", "--workspace", ws], { stdin: patch("*** Add File: b.txt", "+b") })
    expect(human.stderr).toMatch(/^error\[path_denied_by_policy\]/)
    expect(human.stderr).not.toMatch(/\n\s+at /)
  })

  it("a .forkjoin that is a file is refused too, and the file is left alone", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { ".forkjoin": "my notes\n" })
    const r = runCli(["apply", "--workspace", ws, "--json"], { stdin: patch("*** Add File: b.txt", "+b") })
    expect(r.status).toBe(1)
    expect(json(r.stdout).error).toMatchObject({ code: "path_denied_by_policy", paths: [".forkjoin"] })
    expect(fs.readFileSync(path.join(ws, ".forkjoin"), "utf8")).toBe("my notes\n")
    expect(fs.existsSync(path.join(ws, "b.txt"))).toBe(false)
  })

  it("history export-git does not write its default git folder through the link", () => {
    const { outside, ws } = makeSandbox()
    writeTree(ws, { "a.txt": "a\n" })
    applyOk(ws, patch("*** Update File: a.txt", "@@", "-a", "+A"))
    // The history moves outside and the state folder becomes a link to it.
    fs.cpSync(path.join(ws, ".forkjoin"), outside, { recursive: true })
    fs.rmSync(path.join(ws, ".forkjoin"), { recursive: true })
    fs.symlinkSync(outside, path.join(ws, ".forkjoin"))
    const before = snapshotTree(outside)
    const r = runCli(["history", "export-git", "--workspace", ws, "--json"])
    expect(r.status).toBe(1)
    expect(json(r.stdout)).toMatchObject({ ok: false, error: { code: "path_denied_by_policy" } })
    expect(snapshotTree(outside)).toEqual(before)
  })
})

describe("nested .git is denied (item 4)", () => {
  it("*** Add File: src/.git/config is path_denied_by_policy; nothing is written", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "src/.git/HEAD": "ref: refs/heads/main\n", "src/a.ts": "a\n" })
    const before = workspaceTree(ws)
    for (const p of [patch("*** Add File: src/.git/config", "+[core]", "+\thooksPath = /tmp"), patch("*** Add File: lib/.git/hooks/pre-commit", "+x")]) {
      const r = runCli(["apply", "--workspace", ws, "--json"], { stdin: p })
      expect(r.status).toBe(1)
      expect(json(r.stdout).error).toMatchObject({ code: "path_denied_by_policy", stage: 3 })
      expect(workspaceTree(ws)).toEqual(before)
    }
  })
})

describe("history export-git --git-dir never turns a folder of files into a git directory (item 5)", () => {
  const withHistory = () => {
    const s = makeSandbox()
    writeTree(s.ws, { "src/a.ts": "one\n", "src/b.ts": "b\n" })
    applyOk(s.ws, patch("*** Update File: src/a.ts", "@@", "-one", "+two"))
    return s
  }

  it("refuses a non-empty folder that is not a git directory; nothing is written into it", () => {
    const { ws } = withHistory()
    const src = path.join(ws, "src")
    const before = snapshotTree(src)
    const r = runCli(["history", "export-git", "--workspace", ws, "--git-dir", src, "--json"])
    expect(r.status).toBe(1)
    const out = json(r.stdout)
    expect(out).toMatchObject({ ok: false, error: { code: "git_export_failed" } })
    expect(out.error.message).toMatch(/not a git directory/)
    expect(out.error.message).toMatch(/empty folder|does not exist/)
    expect(snapshotTree(src)).toEqual(before)
    const human = runCli(["history", "export-git", "--workspace", ws, "--git-dir", src])
    expect(human.status).toBe(1)
    expect(human.stderr).toMatch(/not a git directory/)
    expect(snapshotTree(src)).toEqual(before)
  })

  it("refuses a worktree (pointing at its .git) and a file", () => {
    const { dir, ws } = withHistory()
    const repo = path.join(dir, "repo")
    fs.mkdirSync(repo)
    git(repo, "init", "-q")
    writeTree(repo, { "README.md": "r\n" })
    const before = snapshotTree(repo)
    const r = runCli(["history", "export-git", "--workspace", ws, "--git-dir", repo, "--json"])
    expect(r.status).toBe(1)
    expect(json(r.stdout).error.message).toMatch(/\.git/)
    expect(snapshotTree(repo)).toEqual(before)
    const file = path.join(dir, "plain.txt")
    fs.writeFileSync(file, "x\n")
    const f = runCli(["history", "export-git", "--workspace", ws, "--git-dir", file, "--json"])
    expect(f.status).toBe(1)
    expect(fs.readFileSync(file, "utf8")).toBe("x\n")
  })

  it("still initialises an empty or missing folder, and writes into an existing git directory", () => {
    const { dir, ws } = withHistory()
    const empty = path.join(dir, "empty.git")
    fs.mkdirSync(empty)
    for (const gitDir of [empty, path.join(dir, "new.git"), path.join(dir, "new.git")]) {
      const r = runCli(["history", "export-git", "--workspace", ws, "--git-dir", gitDir, "--json"])
      expect(r.status, r.stderr).toBe(0)
      expect(json(r.stdout)).toMatchObject({ ok: true, ref: "refs/forkjoin/cli" })
      expect(git(gitDir, "--git-dir", gitDir, "log", "--format=%s", "refs/forkjoin/cli")).toMatch(/update src\/a\.ts/)
    }
  })
})

describe("plans with write scopes that can never work exit 2 (item 6)", () => {
  it.each([["*"], ["**"], ["src/*"], [".git"], [".forkjoin"], ["src/.git"]])("writeScope %j", (scope) => {
    const { dir, ws } = makeSandbox()
    writeTree(ws, { "src/a.ts": "a\n" })
    const planFile = path.join(dir, "plan.json")
    fs.writeFileSync(planFile, JSON.stringify({
      schemaVersion: 1,
      tasks: [{ id: "t", mode: "transactional_write", writeScope: [scope], actions: [{ finish: {} }] }]
    }))
    const before = workspaceTree(ws)
    const r = runCli(["run", planFile, "--workspace", ws, "--json"])
    expect(r.status).toBe(2)
    expect(r.stderr).toBe("")
    const { error } = JSON.parse(r.stdout)
    expect(error.code).toBe("usage_invalid")
    expect(error.message).toMatch(/\$\.tasks\[0\]\.writeScope\[0\]/)
    expect(error.message).toMatch(scope.includes("*") ? /directory or file paths, not globs/ : /\.git|\.forkjoin/)
    expect(workspaceTree(ws)).toEqual(before)
    expect(fs.existsSync(path.join(ws, ".forkjoin"))).toBe(false)
  })
})

describe(".forkjoin/ stays out of git status", () => {
  it("the first apply writes .forkjoin/.gitignore ('*'); git status shows only the user's change", () => {
    const { ws } = makeSandbox()
    git(ws, "init", "-q")
    writeTree(ws, { "a.txt": "a\n" })
    git(ws, "add", "a.txt")
    git(ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    applyOk(ws, patch("*** Update File: a.txt", "@@", "-a", "+A"))
    expect(fs.readFileSync(path.join(ws, ".forkjoin", ".gitignore"), "utf8")).toMatch(/^\*$/m)
    expect(git(ws, "status", "--porcelain", "--untracked-files=all")).toBe(" M a.txt\n")
  })
})
