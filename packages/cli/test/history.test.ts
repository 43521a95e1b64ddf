/**
 * `forkjoin history ...` through the built bundle: the four views over records the engine
 * wrote with `forkjoin apply`, paging with --cursor/--limit, scope and path refusals, gaps,
 * and the JSON contract (one line, `ok`, `coverage`, `truncated`, `nextCursor`, `caps`).
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, json, makeSandbox, patch, removeSandboxes, runCli, writeTree } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const applyOk = (ws: string, text: string, ...flags: Array<string>) => {
  const r = runCli(["apply", "-", "--workspace", ws, "--json", ...flags], { stdin: text })
  expect(r.status, r.stderr).toBe(0)
  return json(r.stdout).record
}

const history = (ws: string, ...args: Array<string>) => runCli(["history", ...args, "--workspace", ws, "--json"])

describe("forkjoin history", () => {
  it("timeline, turn, diff and file over engine records, with cursors", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "one\ntwo\n" })
    const r1 = applyOk(ws, patch("*** Update File: a.txt", "@@", " one", "-two", "+2"), "--turn", "t1")
    const r2 = applyOk(ws, patch("*** Update File: a.txt", "*** Move to: b.txt", "@@", "-one", "+1"), "--turn", "t1")
    const r3 = applyOk(ws, patch("*** Add File: c.txt", "+c"), "--turn", "t2")

    const all = json(history(ws, "timeline").stdout)
    expect(all.ok).toBe(true)
    expect(all.items.map((r: any) => r.recordId)).toEqual([r1.recordId, r2.recordId, r3.recordId])
    expect(all.coverage).toEqual({ records: 3, exact: 3, partial: 0, uncertain: 0, gaps: 0, providerAggregates: 0, verifiedAggregates: 0 })
    expect(all.nextCursor).toBe(null)

    const first = json(history(ws, "timeline", "--limit", "2").stdout)
    expect(first.items).toHaveLength(2)
    expect(typeof first.nextCursor).toBe("string")
    const second = json(history(ws, "timeline", "--limit", "2", "--cursor", first.nextCursor).stdout)
    expect(second.items.map((r: any) => r.recordId)).toEqual([r3.recordId])
    expect(second.nextCursor).toBe(null)

    const turn = json(history(ws, "turn", "t1").stdout)
    expect(turn.items).toEqual([
      expect.objectContaining({ kind: "move", path: "b.txt", moveFrom: "a.txt", records: [r1.recordId, r2.recordId] })
    ])

    const diff = json(history(ws, "diff", r1.recordId).stdout)
    expect(diff.items[0].diff).toBe("--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n")
    const text = runCli(["history", "diff", r2.recordId, "--workspace", ws])
    expect(text.stdout).toContain("--- a/a.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n-one\n+1\n 2\n")

    const ofB = json(history(ws, "file", "b.txt").stdout)
    expect(ofB.items.map((i: any) => i.recordId)).toEqual([r1.recordId, r2.recordId])
    const ofA = json(history(ws, "file", "a.txt").stdout)
    expect(ofA.items.map((i: any) => i.recordId)).toEqual([r1.recordId, r2.recordId])
  })

  it("scopes to the caller's thread and refuses paths outside the workspace", () => {
    const { ws, outside } = makeSandbox()
    applyOk(ws, patch("*** Add File: mine.txt", "+m"), "--thread", "me")
    applyOk(ws, patch("*** Add File: theirs.txt", "+t"), "--thread", "them")
    const mine = json(history(ws, "timeline", "--thread", "me").stdout)
    expect(mine.items.map((r: any) => r.changes[0].path)).toEqual(["mine.txt"])
    const refused = history(ws, "timeline", "--thread", "me", "--of", "them")
    expect(refused.status).toBe(1)
    expect(json(refused.stdout).error.code).toBe("not_visible")
    expect(json(history(ws, "file", "theirs.txt", "--thread", "me").stdout).items).toEqual([])
    for (const p of ["../ws/mine.txt", path.join(outside, "x.txt"), "/etc/passwd"]) {
      const r = history(ws, "file", p, "--thread", "me")
      expect(r.status, p).toBe(1)
      expect(json(r.stdout).error.code).toBe("path_refused")
    }
    const bad = history(ws, "timeline", "--cursor", "not-a-cursor")
    expect(bad.status).toBe(1)
    expect(json(bad.stdout).error.code).toBe("invalid_cursor")
  })

  it("reports a file edited outside forkjoin without writing; the next apply of it records the gap", () => {
    const { ws } = makeSandbox()
    const added = applyOk(ws, patch("*** Add File: f.txt", "+1"))
    fs.writeFileSync(path.join(ws, "f.txt"), "by hand\n")
    const db = path.join(ws, ".forkjoin", "history.db")
    const records = () => json(history(ws, "timeline", "--limit", "1000").stdout).items.length
    const page = json(history(ws, "file", "f.txt").stdout)
    expect(page.items.map((i: any) => [i.outcome, i.provenance])).toEqual([["applied", "native_engine"]])
    expect(page.coverage.gaps).toBe(0)
    expect(page.coverage.unrecordedChanges).toEqual([
      { path: "f.txt", recordedHash: added.changes[0].after.hash, diskHash: expect.stringMatching(/^sha256:/) }
    ])
    expect(page.coverage.unrecordedChanges[0].diskHash).not.toBe(added.changes[0].after.hash)
    const text = runCli(["history", "file", "f.txt", "--workspace", ws])
    expect(text.stdout).toContain("unrecorded: f.txt was edited outside forkjoin since its last record")
    expect(records()).toBe(1)
    expect(json(history(ws, "file", "f.txt", "--no-gap-check").stdout).coverage.unrecordedChanges).toBeUndefined()
    expect(fs.existsSync(db)).toBe(true)

    applyOk(ws, patch("*** Update File: f.txt", "@@", "-by hand", "+third"))
    const after = json(history(ws, "file", "f.txt").stdout)
    expect(after.items.map((i: any) => i.outcome)).toEqual(["applied", "gap", "applied"])
    expect(after.coverage.gaps).toBe(1)
    expect(after.coverage.unrecordedChanges).toBeUndefined()
  })

  it("never shows a secret in .git/config: events claiming denied paths are refused, views do not read them", () => {
    const { dir, ws } = makeSandbox()
    const SECRET = "ghp_s3cretTokenThatMustNeverLeak"
    fs.mkdirSync(path.join(ws, ".git"))
    fs.writeFileSync(path.join(ws, ".git", "config"), `[credential]\n\thelper = store\n\ttoken = ${SECRET}\n`)
    fs.symlinkSync(".git", path.join(ws, "g"))
    applyOk(ws, patch("*** Add File: a.txt", "+a"))
    const event = path.join(dir, "event.json")
    const diff = path.join(dir, "turn.diff")
    for (const claimed of [".git/config", "sub/.forkjoin/x", path.join(ws, ".git", "config")]) {
      fs.writeFileSync(event, JSON.stringify({ tool_name: "Write", tool_input: { file_path: claimed, content: "x\n" } }))
      const r = runCli(["history", "ingest", "--format", "claude-tool-event", event, "--workspace", ws, "--json"])
      expect(r.status, r.stdout).toBe(1)
      expect(json(r.stdout).error.code).toBe("path_denied_by_policy")
    }
    fs.writeFileSync(diff, "diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-[core]\n+[credential]\n")
    const d = runCli(["history", "ingest", "--format", "codex-turn-diff", diff, "--workspace", ws, "--verify", "--json"])
    expect(json(d.stdout).error.code).toBe("path_denied_by_policy")
    const timeline = json(history(ws, "timeline", "--limit", "1000").stdout)
    expect(timeline.items).toHaveLength(1)
    const outputs = [
      history(ws, "timeline", "--limit", "1000"),
      history(ws, "file", ".git/config"),
      history(ws, "file", "g/config"),
      runCli(["history", "file", ".git/config", "--workspace", ws]),
      runCli(["history", "file", "g/config", "--workspace", ws]),
      history(ws, "diff", timeline.items[0].recordId),
      history(ws, "turn", timeline.items[0].turnId)
    ]
    for (const o of outputs) expect(o.stdout + o.stderr).not.toContain(SECRET)
    expect(json(history(ws, "file", ".git/config").stdout).coverage.unrecordedChanges).toBeUndefined()
    expect(json(history(ws, "timeline", "--limit", "1000").stdout).items).toHaveLength(1)
  })

  it("reports a missing history and bad flags clearly", () => {
    const { ws } = makeSandbox()
    const none = history(ws, "timeline")
    expect(none.status).toBe(1)
    expect(json(none.stdout).error.code).toBe("no_history")
    expect(fs.existsSync(path.join(ws, ".forkjoin"))).toBe(false)
    const usage = runCli(["history", "timeline", "--workspace", ws, "--limit", "many"])
    expect(usage.status).toBe(2)
  })

  it("ingests a Codex turn diff and a Claude event, verifies one, refuses a malformed event", () => {
    const { dir, ws } = makeSandbox()
    const diffFile = path.join(dir, "turn.diff")
    fs.writeFileSync(diffFile, "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n")
    fs.writeFileSync(path.join(ws, "a.txt"), "keep\nnew\n")
    const r = runCli(["history", "ingest", "--format", "codex-turn-diff", diffFile, "--workspace", ws, "--turn", "t9", "--verify", "--json"])
    expect(r.status, r.stderr).toBe(0)
    const out = json(r.stdout)
    expect([out.record.authority, out.record.provenance, out.record.exactness]).toEqual(["codex_aggregate_event", "provider_aggregate", "partial"])
    expect([out.verification.exactness, out.verification.links.verifies]).toEqual(["exact", out.record.recordId])
    const tl = json(history(ws, "timeline", "--turn", "t9").stdout)
    expect([tl.coverage.providerAggregates, tl.coverage.verifiedAggregates]).toEqual([1, 1])

    const event = path.join(dir, "edit.json")
    fs.writeFileSync(event, JSON.stringify({ tool_name: "Write", tool_input: { file_path: path.join(ws, "w.txt"), content: "w\n" }, tool_response: { type: "create" } }))
    const c = runCli(["history", "ingest", "--format", "claude-tool-event", event, "--workspace", ws, "--json"])
    expect(c.status, c.stderr).toBe(0)
    expect(json(c.stdout).record.authority).toBe("managed_claude_patch_engine")

    const before = json(history(ws, "timeline", "--limit", "1000").stdout).items.length
    fs.writeFileSync(event, "{\"tool_name\": \"Edit\"")
    const bad = runCli(["history", "ingest", "--format", "claude-tool-event", event, "--workspace", ws, "--json"])
    expect(bad.status).toBe(1)
    expect(json(bad.stdout).error.code).toBe("malformed_event")
    expect(json(history(ws, "timeline", "--limit", "1000").stdout).items.length).toBe(before)
    const missing = runCli(["history", "ingest", "--format", "codex-turn-diff", path.join(dir, "nope.diff"), "--workspace", ws])
    expect(missing.status).toBe(2)
  })

  it("export-git writes refs/forkjoin/<thread> that real git log -p shows, incrementally, without touching the worktree", () => {
    const { ws } = makeSandbox()
    execFileSync("git", ["init", "-q"], { cwd: ws })
    writeTree(ws, { "a.txt": "one\ntwo\n" })
    const r1 = applyOk(ws, patch("*** Update File: a.txt", "@@", " one", "-two", "+2"), "--thread", "T")
    const status = execFileSync("git", ["status", "--porcelain"], { cwd: ws, encoding: "utf8" })
    const first = runCli(["history", "export-git", "--workspace", ws, "--thread", "T", "--json"])
    expect(first.status, first.stderr).toBe(0)
    expect(json(first.stdout)).toMatchObject({ ok: true, ref: "refs/forkjoin/T", exported: 1 })
    const log = execFileSync("git", ["log", "-p", "refs/forkjoin/T"], { cwd: ws, encoding: "utf8" })
    expect(log).toContain(" one\n-two\n+2\n")
    expect(log).toContain(`Forkjoin-Record: ${r1.recordId}`)
    expect(log).toContain("Forkjoin-Exactness: exact")
    applyOk(ws, patch("*** Add File: b.txt", "+b"), "--thread", "T")
    const second = json(runCli(["history", "export-git", "--workspace", ws, "--thread", "T", "--json"]).stdout)
    expect(second.exported).toBe(1)
    expect(execFileSync("git", ["rev-list", "--count", "refs/forkjoin/T"], { cwd: ws, encoding: "utf8" }).trim()).toBe("3")
    expect(execFileSync("git", ["status", "--porcelain"], { cwd: ws, encoding: "utf8" })).toBe(status + "?? b.txt\n")
    expect(fs.existsSync(path.join(ws, ".git", "index"))).toBe(false)
  })
})
