/**
 * End-to-end tests of the built `forkjoin` bundle (SPEC §9): exit codes 0/1/2, the human and
 * `--json` outputs, stdin input, the resolve-stage refusals that must leave the tree as it was,
 * the patch history the engine writes (SPEC §4.1, §4.3) and `forkjoin repair` after a crash
 * (SPEC §4.5). Workspace trees are compared without `.forkjoin/`, forkjoin's own directory.
 */
import { PatchHistoryRecord } from "@forkjoin/schema/PatchHistoryRecord"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  BIN,
  appliedSummary,
  buildCli,
  defaultDb,
  findEntries,
  makeSandbox,
  patch,
  readHistory,
  removeSandboxes,
  ROOT,
  runCli,
  snapshotTree,
  workspaceTree,
  writeTree
} from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const sha256 = (text: string | Uint8Array) => `sha256:${createHash("sha256").update(text).digest("hex")}`

/** The Snapshot (SPEC §4.2) of a UTF-8 text file with LF line endings. */
const lfSnapshot = (text: string, mode = 0o644) => ({
  hash: sha256(text),
  bytes: Buffer.byteLength(text),
  encoding: "utf8",
  lineEnding: "lf",
  finalNewline: text.endsWith("\n"),
  mode
})

/** Parses stdout as exactly one JSON line. */
const jsonLine = (stdout: string): any => {
  expect(stdout.endsWith("\n")).toBe(true)
  const lines = stdout.slice(0, -1).split("\n")
  expect(lines).toHaveLength(1)
  return JSON.parse(lines[0]!)
}

const ADD_AND_UPDATE = patch(
  "*** Add File: new/b.txt",
  "+bee",
  "*** Update File: a.txt",
  "@@",
  " hello",
  "-world",
  "+there"
)

describe("forkjoin (root)", () => {
  it("--help lists exactly the shipped subcommands and exits 0", () => {
    const r = runCli(["--help"])
    expect(r.status).toBe(0)
    expect(r.stdout).toMatch(/^\s+apply\s+Apply an apply_patch patch/m)
    expect(r.stdout).toMatch(/^\s+repair\s+Repair changes left half-done by a crash/m)
    expect(r.stdout).toMatch(/^\s+demo\s+The fork\/join job on a sample workspace/m)
    expect(r.stdout).toMatch(/^\s+run\s+Run a plan's children and join/m)
    expect(r.stdout).toMatch(/^\s+conflicts\s+List the conflicts/m)
    expect(r.stdout).toMatch(/^\s+resolve\s+Resolve a conflict/m)
    expect(r.stdout).toMatch(/^\s+rollback\s+Undo one transaction/m)
    expect(r.stdout).toMatch(/^\s+status\s+Interrupted runs and open conflicts/m)
    expect(r.stdout).toMatch(/^\s+gc\s+/m)
    expect(r.stdout).toMatch(/^\s+history\s+Query the patch history/m)
    expect(r.stdout).toMatch(/^\s+probe\s+Prove the merge machinery/m)
    expect(r.stdout).toMatch(/^\s+gate\s+Check the probe evidence/m)
    expect(r.stdout).toMatch(/^\s+keygen\s+Make a key pair/m)
    expect(r.stdout).toMatch(/^\s+config\s+Show the autonomy configuration/m)
    expect(r.stdout).toMatch(/^\s+mcp\s+Serve the workspace/m); expect(r.stdout).toMatch(/^\s+agent\s+Run a model-driven parent/m); expect(r.stdout).toMatch(/^\s+serve\s/m); expect(r.stdout).toMatch(/^\s+token\s/m)
  })

  it("--version prints the root package.json version", () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"))
    const r = runCli(["--version"])
    expect(r.status).toBe(0)
    expect(r.stdout).toContain(version)
  })

  it("apply --help documents every contract flag and the default history database", () => {
    const r = runCli(["apply", "--help"])
    expect(r.status).toBe(0)
    for (const flag of ["--workspace", "--db", "--profile", "--thread", "--turn", "--json", "--preserve-line-endings"]) {
      expect(r.stdout).toContain(flag)
    }
    // Help wraps at 80 columns through a pipe: the description may continue on the next line.
    expect(r.stdout).toMatch(/--db FILE {2,}Patch history database \(default\s+<workspace>\/\.forkjoin\/history\.db/)
    expect(r.stdout).not.toContain("not used yet")
  })

  it("repair --help documents --workspace, --db and --json", () => {
    const r = runCli(["repair", "--help"])
    expect(r.status).toBe(0)
    for (const flag of ["--workspace", "--db", "--json"]) expect(r.stdout).toContain(flag)
  })

  it("demo runs the fork/join job on a temporary sample and removes it (exit 0)", () => {
    const r = runCli(["demo"])
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/mean-empty\s+auto_merged/)
    expect(r.stdout).toMatch(/div-int\s+conflicted_unresolved/)
    expect(r.stdout).toContain("<<<<<<< workspace")
    expect(r.stdout).toContain(">>>>>>> div-int")
    expect(r.stdout).toMatch(/div-int is now resolved/)
    expect(r.stdout).toMatch(/#6 rollback:subagent_merge:run-[0-9a-f-]+\/docs/)
    const dir = /sample workspace in (\S+)/.exec(r.stdout)?.[1]
    expect(dir).toBeDefined()
    expect(fs.existsSync(dir!)).toBe(false)
  })

  it("stops quietly when the reader closes the pipe early (no EPIPE trace)", () => {
    const r = spawnSync("sh", ["-c", `"${process.execPath}" "${BIN}" demo | head -1`], { encoding: "utf8" })
    expect(r.stdout).toMatch(/^forkjoin demo: /)
    expect(r.stderr).not.toMatch(/EPIPE|node:events/)
  })

  it("an unknown subcommand is a usage error (exit 2)", () => {
    const r = runCli(["frobnicate"])
    expect(r.status).toBe(2)
    expect(r.stdout).toBe("")
    expect(r.stderr).toContain("frobnicate")
  })
})

describe("forkjoin apply: success", () => {
  it("applies a patch file and prints Codex's summary (exit 0)", () => {
    const { dir, ws } = makeSandbox()
    writeTree(ws, { "a.txt": "hello\nworld\n" })
    fs.writeFileSync(path.join(dir, "p.patch"), ADD_AND_UPDATE)
    const r = runCli(["apply", path.join(dir, "p.patch"), "--workspace", ws])
    expect(r.stderr).toBe("")
    expect(r.status).toBe(0)
    expect(appliedSummary(r.stdout)).toBe("Success. Updated the following files:\nA new/b.txt\nM a.txt\n")
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("hello\nthere\n")
    expect(fs.readFileSync(path.join(ws, "new/b.txt"), "utf8")).toBe("bee\n")
    // No staging leftovers; forkjoin's own files stay under .forkjoin/.
    expect(Object.keys(workspaceTree(ws)).sort()).toEqual(["a.txt", "new", "new/b.txt"])
    expect(findEntries(ws, /\.tmp$/)).toEqual([])
  })

  it("reads the patch from stdin with '-' and with no argument", () => {
    for (const args of [["-"], []]) {
      const { ws } = makeSandbox()
      writeTree(ws, { "a.txt": "hello\nworld\n" })
      const r = runCli(["apply", ...args, "--workspace", ws], { stdin: ADD_AND_UPDATE })
      expect(r.status).toBe(0)
      expect(appliedSummary(r.stdout)).toBe("Success. Updated the following files:\nA new/b.txt\nM a.txt\n")
      expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("hello\nthere\n")
    }
  })

  it("--json prints one line with the PatchHistoryRecord: snapshots, thread and turn", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "hello\nworld\n", "gone.txt": "bye\n" })
    const r = runCli(["apply", "-", "--workspace", ws, "--json", "--thread", "th-1", "--turn", "tu-1"], {
      stdin: patch(
        "*** Add File: new/b.txt",
        "+bee",
        "*** Update File: a.txt",
        "@@",
        " hello",
        "-world",
        "+there",
        "*** Delete File: gone.txt"
      )
    })
    expect(r.stderr).toBe("")
    expect(r.status).toBe(0)
    const out = jsonLine(r.stdout)
    expect(Object.keys(out).sort()).toEqual(["ok", "record"])
    expect(out.ok).toBe(true)
    const byPath = Object.fromEntries(out.record.changes.map((c: any) => [c.path, c]))
    expect(out.record).toMatchObject({
      schemaVersion: 1,
      threadId: "th-1",
      turnId: "tu-1",
      commitOrdinal: 1,
      authority: "native_patch_engine",
      provenance: "native_engine",
      exactness: "exact",
      outcome: "applied",
      directoryEffects: [{ kind: "created", path: "new" }],
      warnings: [],
      links: {}
    })
    expect(out.record.transactionId).toMatch(/^patch:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    // The CLI preview's fields are gone: the record is a PatchHistoryRecord, nothing more.
    expect(out.record).not.toHaveProperty("profile")
    expect(out.record).not.toHaveProperty("summary")
    expect(out.record.changes).toHaveLength(3)
    expect(byPath["new/b.txt"]).toEqual({ kind: "add", path: "new/b.txt", after: lfSnapshot("bee\n") })
    expect(byPath["a.txt"]).toEqual({
      kind: "update",
      path: "a.txt",
      before: lfSnapshot("hello\nworld\n"),
      after: lfSnapshot("hello\nthere\n")
    })
    expect(byPath["gone.txt"]).toEqual({ kind: "delete", path: "gone.txt", before: lfSnapshot("bye\n") })
    expect(fs.existsSync(path.join(ws, "gone.txt"))).toBe(false)
  })

  it("the human summary of a record lists adds, then modifications, then deletes", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "hello\nworld\n", "gone.txt": "bye\n" })
    const r = runCli(["apply", "-", "--workspace", ws], {
      stdin: patch(
        "*** Delete File: gone.txt",
        "*** Update File: a.txt",
        "@@",
        " hello",
        "-world",
        "+there",
        "*** Add File: new/b.txt",
        "+bee"
      )
    })
    expect(r.stderr).toBe("")
    expect(r.status).toBe(0)
    expect(appliedSummary(r.stdout)).toBe("Success. Updated the following files:\nA new/b.txt\nM a.txt\nD gone.txt\n")
  })

  it("moves a file, keeping its permission bits", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "run.sh": "#!/bin/sh\necho hi\n" })
    fs.chmodSync(path.join(ws, "run.sh"), 0o755)
    const r = runCli(["apply", "--workspace", ws, "--json"], {
      stdin: patch("*** Update File: run.sh", "*** Move to: bin/run.sh", "@@", "-echo hi", "+echo bye")
    })
    expect(r.status).toBe(0)
    const out = jsonLine(r.stdout)
    expect(out.record.changes).toEqual([
      {
        kind: "move",
        path: "bin/run.sh",
        moveFrom: "run.sh",
        before: lfSnapshot("#!/bin/sh\necho hi\n", 0o755),
        after: lfSnapshot("#!/bin/sh\necho bye\n", 0o755)
      }
    ])
    expect(workspaceTree(ws)).toEqual({
      bin: expect.stringMatching(/^dir /),
      "bin/run.sh": `file 755 ${Buffer.from("#!/bin/sh\necho bye\n").toString("base64")}`
    })
  })

  it("native keeps CRLF; codex keeps it only with --preserve-line-endings", () => {
    const crlfPatch = patch("*** Update File: lines.txt", "@@", "-one", "+ONE", " two")
    const run = (extra: ReadonlyArray<string>) => {
      const { ws } = makeSandbox()
      writeTree(ws, { "lines.txt": "one\r\ntwo\r\n" })
      const r = runCli(["apply", "--workspace", ws, ...extra], { stdin: crlfPatch })
      expect(r.status).toBe(0)
      return fs.readFileSync(path.join(ws, "lines.txt"), "utf8")
    }
    expect(run([])).toBe("ONE\r\ntwo\r\n")
    expect(run(["--profile", "codex", "--preserve-line-endings"])).toBe("ONE\r\ntwo\r\n")
    expect(run(["--profile", "codex"])).toBe("ONE\ntwo\n")
  })

  it("native refuses Add File onto an existing file; codex overwrites it", () => {
    const addPatch = patch("*** Add File: a.txt", "+new")
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "old\n" })
    const native = runCli(["apply", "--workspace", ws, "--json"], { stdin: addPatch })
    expect(native.status).toBe(1)
    expect(jsonLine(native.stdout).error).toMatchObject({ code: "target_exists", paths: ["a.txt"] })
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("old\n")

    const codex = runCli(["apply", "--workspace", ws, "--profile", "codex"], { stdin: addPatch })
    expect(codex.status).toBe(0)
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("new\n")
  })
})

describe("forkjoin apply: rejections leave the workspace untouched (exit 1)", () => {
  it("prints error[code] (stage name) and the path on stderr", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "hello\nworld\n" })
    const before = workspaceTree(ws)
    const r = runCli(["apply", "--workspace", ws], {
      stdin: patch("*** Update File: a.txt", "@@", "-nope", "+x")
    })
    expect(r.status).toBe(1)
    expect(r.stdout).toBe("")
    expect(r.stderr).toMatch(/^error\[context_not_found\] \(stage plan\): /)
    expect(r.stderr).toContain("  path: a.txt\n")
    expect(workspaceTree(ws)).toEqual(before)
  })

  it("--json prints {ok:false,error:{code,stage,stageName,paths,message}} only", () => {
    const { ws } = makeSandbox()
    const r = runCli(["apply", "--workspace", ws, "--json"], { stdin: "not a patch" })
    expect(r.status).toBe(1)
    expect(r.stderr).toBe("")
    const out = jsonLine(r.stdout)
    expect(out).toEqual({
      ok: false,
      error: { code: "patch_syntax", stage: 2, stageName: "parse", paths: [], message: expect.any(String) }
    })
  })

  it("a later failing operation cancels earlier ones (all or nothing)", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "hello\n", "b.txt": "bee\n" })
    const before = workspaceTree(ws)
    const r = runCli(["apply", "--workspace", ws, "--json"], {
      stdin: patch(
        "*** Add File: c.txt",
        "+sea",
        "*** Delete File: b.txt",
        "*** Update File: a.txt",
        "@@",
        "-missing line",
        "+x"
      )
    })
    expect(r.status).toBe(1)
    expect(jsonLine(r.stdout).error.code).toBe("context_not_found")
    expect(workspaceTree(ws)).toEqual(before)
  })

  it("refuses a symlinked directory that leads outside the workspace (path_outside_roots)", () => {
    const { outside, ws } = makeSandbox()
    writeTree(outside, { "secret.txt": "secret\n" })
    writeTree(ws, { "a.txt": "hello\n" })
    fs.symlinkSync(outside, path.join(ws, "linkdir"))
    const beforeWs = workspaceTree(ws)
    const beforeOutside = snapshotTree(outside)
    for (
      const p of [
        patch("*** Add File: linkdir/evil.txt", "+x"),
        patch("*** Update File: linkdir/secret.txt", "@@", "-secret", "+pwned"),
        patch("*** Add File: ok.txt", "+fine", "*** Delete File: linkdir/secret.txt")
      ]
    ) {
      const r = runCli(["apply", "--workspace", ws, "--json"], { stdin: p })
      expect(r.status).toBe(1)
      const { error } = jsonLine(r.stdout)
      expect(error).toMatchObject({ code: "path_outside_roots", stage: 3 })
      expect(error.paths[0]).toMatch(/^linkdir\//)
      expect(workspaceTree(ws)).toEqual(beforeWs)
      expect(snapshotTree(outside)).toEqual(beforeOutside)
    }
  })

  it("refuses a symlinked file that points outside the workspace", () => {
    const { outside, ws } = makeSandbox()
    writeTree(outside, { "secret.txt": "secret\n" })
    fs.symlinkSync(path.join(outside, "secret.txt"), path.join(ws, "secret.txt"))
    const beforeOutside = snapshotTree(outside)
    const r = runCli(["apply", "--workspace", ws], {
      stdin: patch("*** Update File: secret.txt", "@@", "-secret", "+pwned")
    })
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/^error\[path_outside_roots\] \(stage resolve\): /)
    expect(snapshotTree(outside)).toEqual(beforeOutside)
    expect(fs.readlinkSync(path.join(ws, "secret.txt"))).toBe(path.join(outside, "secret.txt"))
  })

  it("refuses .git/** and .forkjoin/** (path_denied_by_policy), also through '..' or a symlink", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { ".git/config": "[core]\n", "a.txt": "hello\n" })
    fs.symlinkSync(".git", path.join(ws, "g"))
    const before = workspaceTree(ws)
    for (
      const p of [
        patch("*** Add File: .git/x", "+x"),
        patch("*** Update File: .git/config", "@@", "-[core]", "+[evil]"),
        patch("*** Add File: src/../.git/hooks/pre-commit", "+rm -rf /"),
        patch("*** Update File: g/config", "@@", "-[core]", "+[evil]"),
        patch("*** Add File: .forkjoin/history.db", "+x")
      ]
    ) {
      const r = runCli(["apply", "--workspace", ws, "--json"], { stdin: p })
      expect(r.status).toBe(1)
      expect(jsonLine(r.stdout).error).toMatchObject({ code: "path_denied_by_policy", stage: 3 })
      expect(workspaceTree(ws)).toEqual(before)
    }
    // .forkjoin/ is left out of the tree comparison, so check it directly: the history database
    // is still a SQLite database, and none of the refusals recorded anything.
    expect(fs.readFileSync(defaultDb(ws)).subarray(0, 16).toString("latin1")).toBe("SQLite format 3\0")
    expect(readHistory(defaultDb(ws))).toEqual({ records: [], intents: {} })
  })
})

describe("forkjoin apply and repair: usage errors (exit 2, nothing on stdout)", () => {
  const { dir, ws } = makeSandbox()
  const patchFile = path.join(dir, "ok.patch")
  fs.writeFileSync(patchFile, patch("*** Add File: x.txt", "+x"))

  it.each([
    ["unknown flag", ["apply", patchFile, "--workspace", ws, "--frobnicate"], /--frobnicate/],
    ["bad --profile", ["apply", patchFile, "--workspace", ws, "--profile", "yolo"], /--profile/],
    ["empty --thread", ["apply", patchFile, "--workspace", ws, "--thread", ""], /request_invalid: .*"" is refused \(it is empty\)/],
    ["--turn with a control character", ["apply", patchFile, "--workspace", ws, "--turn", "a\u0001b"], /request_invalid: .*it contains "\\u0001"/],
    ["--thread padded with whitespace", ["apply", patchFile, "--workspace", ws, "--thread", " t"], /request_invalid: .*it contains " "/],
    ["unreadable patch file", ["apply", path.join(dir, "missing.patch"), "--workspace", ws], /missing\.patch/],
    ["missing workspace directory", ["apply", patchFile, "--workspace", path.join(dir, "nope")], /nope/],
    ["repair: unknown flag", ["repair", "--workspace", ws, "--frobnicate"], /--frobnicate/],
    ["repair: missing workspace directory", ["repair", "--workspace", path.join(dir, "nope")], /nope/]
  ])("%s", (_name, args, mentions) => {
    const r = runCli(args)
    expect(r.status).toBe(2)
    expect(r.stdout).toBe("")
    expect(r.stderr).toMatch(mentions)
    expect(snapshotTree(ws)).toEqual({})
    expect(fs.existsSync(path.join(dir, "nope"))).toBe(false)
  })
})

// -------------------------------------------------------------------------------------
// patch history (SPEC §4.1, §4.3)
// -------------------------------------------------------------------------------------

const decodeRecord = Schema.decodeUnknownSync(PatchHistoryRecord)

describe("forkjoin apply: patch history", () => {
  it("writes one record per apply to <workspace>/.forkjoin/history.db, ordinals 1 then 2", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "hello\nworld\n" })
    const first = runCli(["apply", "--workspace", ws, "--json"], { stdin: patch("*** Add File: x.txt", "+x") })
    expect(first.status).toBe(0)
    expect(fs.existsSync(defaultDb(ws))).toBe(true)
    const second = runCli(["apply", "--workspace", ws, "--json"], { stdin: ADD_AND_UPDATE })
    expect(second.status).toBe(0)
    const r1 = jsonLine(first.stdout).record
    const r2 = jsonLine(second.stdout).record
    expect(r1.commitOrdinal).toBe(1)
    expect(r2.commitOrdinal).toBe(2)
    expect(r2.committedAt >= r1.committedAt).toBe(true)
    expect(r2.environmentId).toBe(r1.environmentId)
    for (const key of ["recordId", "transactionId", "invocationId"]) expect(r2[key]).not.toBe(r1[key])
    // Without --thread/--turn both default to "cli".
    expect(r1).toMatchObject({ threadId: "cli", turnId: "cli" })
    // The database holds exactly what was printed, in commit order, and every intent is closed.
    const history = readHistory(defaultDb(ws))
    expect(history.records).toEqual([r1, r2])
    expect(history.intents).toEqual({ committed: 2 })
  })

  it("--thread and --turn land in the stored record (also without --json)", () => {
    const { ws } = makeSandbox()
    const r = runCli(["apply", "--workspace", ws, "--thread", "th-42", "--turn", "tu-7"], {
      stdin: patch("*** Add File: x.txt", "+x")
    })
    expect(r.status).toBe(0)
    expect(appliedSummary(r.stdout)).toBe("Success. Updated the following files:\nA x.txt\n")
    const { records } = readHistory(defaultDb(ws))
    expect(records).toHaveLength(1)
    expect(decodeRecord(records[0])).toMatchObject({
      threadId: "th-42",
      turnId: "tu-7",
      commitOrdinal: 1,
      changes: [{ kind: "add", path: "x.txt", after: lfSnapshot("x\n") }]
    })
  })

  it("--db FILE puts the database there and nothing in the workspace's .forkjoin/history.db", () => {
    const { dir, ws } = makeSandbox()
    const db = path.join(dir, "elsewhere", "nested", "h.db")
    for (const [i, p] of [patch("*** Add File: x.txt", "+x"), patch("*** Add File: y.txt", "+y")].entries()) {
      const r = runCli(["apply", "--workspace", ws, "--db", db, "--json"], { stdin: p })
      expect(r.status).toBe(0)
      expect(jsonLine(r.stdout).record.commitOrdinal).toBe(i + 1)
    }
    expect(fs.existsSync(defaultDb(ws))).toBe(false)
    expect(findEntries(ws, /^history\.db/)).toEqual([])
    const history = readHistory(db)
    expect(history.records.map((rec) => decodeRecord(rec).changes.map((c) => c.path))).toEqual([["x.txt"], ["y.txt"]])
    // repair honours --db too, and still finds nothing in the workspace's default location.
    const repair = runCli(["repair", "--workspace", ws, "--db", db, "--json"])
    expect(repair.status).toBe(0)
    expect(jsonLine(repair.stdout)).toEqual({ ok: true, outcomes: [] })
    expect(fs.existsSync(defaultDb(ws))).toBe(false)
  })

  it("--json prints a record that decodes with the PatchHistoryRecord schema, like the stored one", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "hello\nworld\n", "gone.txt": "bye\n", "old.txt": "move me\n" })
    const r = runCli(["apply", "--workspace", ws, "--json"], {
      stdin: patch(
        "*** Add File: new/b.txt",
        "+bee",
        "*** Update File: a.txt",
        "@@",
        " hello",
        "-world",
        "+there",
        "*** Delete File: gone.txt",
        "*** Update File: old.txt",
        "*** Move to: moved/old.txt",
        "@@",
        "-move me",
        "+moved"
      )
    })
    expect(r.status).toBe(0)
    const printed = jsonLine(r.stdout).record
    const record = decodeRecord(printed)
    expect(record.changes.map((c) => [c.kind, c.path])).toEqual([
      ["add", "new/b.txt"],
      ["update", "a.txt"],
      ["delete", "gone.txt"],
      ["move", "moved/old.txt"]
    ])
    expect(Schema.encodeSync(PatchHistoryRecord)(record)).toEqual(printed)
    const { records } = readHistory(defaultDb(ws))
    expect(records).toEqual([printed])
    // The schema really checks: the old preview shape (null sides, profile, summary) is refused.
    expect(() => decodeRecord({ ...printed, changes: [{ kind: "add", path: "x", before: null, after: null }] })).toThrow()
    expect(() => decodeRecord({ ...printed, commitOrdinal: 0 })).toThrow()
  })

  it("a rejected apply writes no record and leaves no open intent; the next apply gets ordinal 1", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "hello\nworld\n" })
    for (
      const [p, code] of [
        [patch("*** Update File: a.txt", "@@", "-nope", "+x"), "context_not_found"],
        [patch("*** Add File: a.txt", "+x"), "target_exists"],
        [patch("*** Add File: .git/x", "+x"), "path_denied_by_policy"]
      ] as const
    ) {
      const r = runCli(["apply", "--workspace", ws, "--json"], { stdin: p })
      expect(r.status).toBe(1)
      expect(jsonLine(r.stdout).error.code).toBe(code)
    }
    expect(readHistory(defaultDb(ws))).toEqual({ records: [], intents: {} })
    const repair = runCli(["repair", "--workspace", ws, "--json"])
    expect(repair.status).toBe(0)
    expect(repair.stdout).toBe(`{"ok":true,"outcomes":[]}\n`)
    const ok = runCli(["apply", "--workspace", ws, "--json"], { stdin: ADD_AND_UPDATE })
    expect(ok.status).toBe(0)
    expect(jsonLine(ok.stdout).record.commitOrdinal).toBe(1)
    expect(readHistory(defaultDb(ws)).records).toHaveLength(1)
  })
})

// -------------------------------------------------------------------------------------
// repair (SPEC §4.5), with FORKJOIN_FAULT=stage:<N> killing apply right after stage N
// -------------------------------------------------------------------------------------

/** A staged temp file of the engine: `.<name>.fj-<intent>.tmp` beside its target. */
const TEMP_FILE = /^\..*\.fj-.*\.tmp$/

/** Runs ADD_AND_UPDATE on a fresh `a.txt` workspace and SIGKILLs it right after `stage`. */
const crashedApply = (stage: number) => {
  const { ws } = makeSandbox()
  writeTree(ws, { "a.txt": "hello\nworld\n" })
  const before = workspaceTree(ws)
  const r = runCli(["apply", "--workspace", ws, "--json"], {
    stdin: ADD_AND_UPDATE,
    env: { FORKJOIN_FAULT: `stage:${stage}` }
  })
  expect(r.signal).toBe("SIGKILL")
  expect(r.stdout).toBe("")
  // The intent is journaled, the record is not.
  expect(readHistory(defaultDb(ws))).toEqual({ records: [], intents: { open: 1 } })
  return { ws, before }
}

describe("forkjoin repair", () => {
  it("on a clean workspace reports nothing to do (exit 0)", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "hello\n" })
    const before = workspaceTree(ws)
    const json = runCli(["repair", "--workspace", ws, "--json"])
    expect(json.stderr).toBe("")
    expect(json.status).toBe(0)
    expect(json.stdout).toBe(`{"ok":true,"outcomes":[]}\n`)
    const human = runCli(["repair", "--workspace", ws])
    expect(human.status).toBe(0)
    expect(human.stdout).toBe("Nothing to repair: no open intents.\n")
    expect(workspaceTree(ws)).toEqual(before)
  })

  it("after a crash past the renames (stage 8) completes the record; the files keep their new content", () => {
    const { ws } = crashedApply(8)
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("hello\nthere\n")
    const r = runCli(["repair", "--workspace", ws, "--json"])
    expect(r.stderr).toBe("")
    expect(r.status).toBe(0)
    const out = jsonLine(r.stdout)
    expect(out.ok).toBe(true)
    expect(out.outcomes).toEqual([
      {
        intentId: expect.any(String),
        transactionId: expect.stringMatching(/^patch:/),
        paths: expect.arrayContaining(["a.txt", "new/b.txt"]),
        action: "completed",
        message: expect.any(String)
      }
    ])
    expect(out.outcomes[0].paths).toHaveLength(2)
    expect(workspaceTree(ws)).toEqual({
      "a.txt": `file 644 ${Buffer.from("hello\nthere\n").toString("base64")}`,
      new: "dir 755",
      "new/b.txt": `file 644 ${Buffer.from("bee\n").toString("base64")}`
    })
    expect(findEntries(ws, TEMP_FILE)).toEqual([])
    // The completed record is exact, marked as recovered, and carries the journaled transaction.
    const history = readHistory(defaultDb(ws))
    expect(history.intents).toEqual({ committed: 1 })
    expect(history.records).toHaveLength(1)
    const record = decodeRecord(history.records[0])
    expect(record).toMatchObject({
      transactionId: out.outcomes[0].transactionId,
      commitOrdinal: 1,
      provenance: "recovery",
      exactness: "exact",
      outcome: "applied"
    })
    expect(record.changes.find((c) => c.path === "a.txt")?.after?.hash).toBe(sha256("hello\nthere\n"))
    expect(record.warnings.map((w) => w.code)).toContain("recovered_after_crash")
    // Repair is idempotent, and history goes on from there.
    expect(jsonLine(runCli(["repair", "--workspace", ws, "--json"]).stdout)).toEqual({ ok: true, outcomes: [] })
    const next = runCli(["apply", "--workspace", ws, "--json"], { stdin: patch("*** Add File: c.txt", "+c") })
    expect(next.status).toBe(0)
    expect(jsonLine(next.stdout).record.commitOrdinal).toBe(2)
  })

  it("after a crash past staging (stage 7) aborts: files unchanged, no temp files left anywhere", () => {
    const { before, ws } = crashedApply(7)
    // The crash really left staged temp files behind for repair to clean up.
    expect(findEntries(ws, TEMP_FILE).length).toBeGreaterThan(0)
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("hello\nworld\n")
    const r = runCli(["repair", "--workspace", ws, "--json"])
    expect(r.stderr).toBe("")
    expect(r.status).toBe(0)
    const out = jsonLine(r.stdout)
    expect(out.ok).toBe(true)
    expect(out.outcomes).toHaveLength(1)
    expect(out.outcomes[0]).toMatchObject({ action: "aborted", transactionId: expect.stringMatching(/^patch:/) })
    // Byte for byte as before: a.txt unchanged, no new/ directory, no temp files.
    expect(workspaceTree(ws)).toEqual(before)
    expect(findEntries(ws, TEMP_FILE)).toEqual([])
    expect(readHistory(defaultDb(ws))).toEqual({ records: [], intents: { aborted: 1 } })
    // No gap: the next applied record is the first.
    const next = runCli(["apply", "--workspace", ws, "--json"], { stdin: ADD_AND_UPDATE })
    expect(next.status).toBe(0)
    expect(jsonLine(next.stdout).record.commitOrdinal).toBe(1)
  })
})

describe("forkjoin apply, repair and history: a corrupt history database (exit 1, history_unavailable)", () => {
  /** A workspace whose default history database is a file of garbage bytes. */
  const corrupt = () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "hello\nworld\n" })
    fs.mkdirSync(path.join(ws, ".forkjoin"))
    fs.writeFileSync(defaultDb(ws), Buffer.alloc(4096, 0x5a))
    return { ws, before: snapshotTree(ws) }
  }

  it("apply --json: history_unavailable at stage 9 with an actionable message; nothing written", () => {
    const { ws, before } = corrupt()
    const r = runCli(["apply", "--workspace", ws, "--json"], { stdin: ADD_AND_UPDATE })
    expect(r.stderr).toBe("")
    expect(r.status).toBe(1)
    const { error } = jsonLine(r.stdout)
    expect(error).toMatchObject({ code: "history_unavailable", stage: 9, stageName: "persist", paths: [] })
    expect(error.message).toContain(defaultDb(ws))
    expect(error.message).toContain("restore it from a backup or pass another one with --db")
    expect(Object.keys(error).sort()).toEqual(["code", "message", "paths", "stage", "stageName"])
    expect(snapshotTree(ws)).toEqual(before)
  })

  it("apply without --json and repair print error[history_unavailable] (stage persist); history views refuse too", () => {
    const { ws, before } = corrupt()
    const human = runCli(["apply", "--workspace", ws], { stdin: ADD_AND_UPDATE })
    expect(human.status).toBe(1)
    expect(human.stdout).toBe("")
    expect(human.stderr).toMatch(/^error\[history_unavailable\] \(stage persist\): cannot open the history database .*--db\.\n$/)
    const repair = runCli(["repair", "--workspace", ws, "--json"])
    expect(repair.status).toBe(1)
    expect(jsonLine(repair.stdout).error).toMatchObject({ code: "history_unavailable", stage: 9 })
    const view = runCli(["history", "timeline", "--workspace", ws, "--json"])
    expect(view.status).toBe(1)
    expect(jsonLine(view.stdout)).toMatchObject({ ok: false, error: { code: "history_unavailable" } })
    expect(snapshotTree(ws)).toEqual(before)
  })
})
