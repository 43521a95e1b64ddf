/**
 * End-to-end tests of the built `forkjoin` bundle (SPEC §9): exit codes 0/1/2, the human and
 * `--json` outputs, stdin input, and the resolve-stage refusals that must leave the tree as it was.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, makeSandbox, patch, removeSandboxes, ROOT, runCli, snapshotTree, writeTree } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const sha256 = (text: string | Uint8Array) => `sha256:${createHash("sha256").update(text).digest("hex")}`

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
  it("--help lists exactly the apply and demo subcommands and exits 0", () => {
    const r = runCli(["--help"])
    expect(r.status).toBe(0)
    expect(r.stdout).toMatch(/^\s+apply\s+Apply an apply_patch patch/m)
    expect(r.stdout).toMatch(/^\s+demo\s+/m)
    expect(r.stdout).not.toMatch(/^\s+(history|run|rollback|repair|probe|gate|config)\s/m)
  })

  it("--version prints the root package.json version", () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"))
    const r = runCli(["--version"])
    expect(r.status).toBe(0)
    expect(r.stdout).toContain(version)
  })

  it("apply --help documents every contract flag and says --db is not used yet", () => {
    const r = runCli(["apply", "--help"])
    expect(r.status).toBe(0)
    for (const flag of ["--workspace", "--db", "--profile", "--thread", "--turn", "--json", "--preserve-line-endings"]) {
      expect(r.stdout).toContain(flag)
    }
    expect(r.stdout).toMatch(/--db FILE\s+.*not used yet/)
  })

  it("demo says it arrives with the orchestrator issue and exits 0", () => {
    const r = runCli(["demo"])
    expect(r.status).toBe(0)
    expect(r.stdout).toContain("Orchestrator & the transactional join")
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
    expect(r.stdout).toBe("Success. Updated the following files:\nA new/b.txt\nM a.txt\n")
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("hello\nthere\n")
    expect(fs.readFileSync(path.join(ws, "new/b.txt"), "utf8")).toBe("bee\n")
    // No staging leftovers.
    expect(Object.keys(snapshotTree(ws)).sort()).toEqual(["a.txt", "new", "new/b.txt"])
  })

  it("reads the patch from stdin with '-' and with no argument", () => {
    for (const args of [["-"], []]) {
      const { ws } = makeSandbox()
      writeTree(ws, { "a.txt": "hello\nworld\n" })
      const r = runCli(["apply", ...args, "--workspace", ws], { stdin: ADD_AND_UPDATE })
      expect(r.status).toBe(0)
      expect(r.stdout).toBe("Success. Updated the following files:\nA new/b.txt\nM a.txt\n")
      expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("hello\nthere\n")
    }
  })

  it("--json prints one line with the record: snapshots, summary, thread and turn", () => {
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
    expect(out.ok).toBe(true)
    const byPath = Object.fromEntries(out.record.changes.map((c: any) => [c.path, c]))
    expect(out.record).toMatchObject({ schemaVersion: 1, profile: "native", threadId: "th-1", turnId: "tu-1" })
    expect(byPath["new/b.txt"]).toEqual({
      kind: "add",
      path: "new/b.txt",
      before: null,
      after: { hash: sha256("bee\n"), bytes: 4 }
    })
    expect(byPath["a.txt"]).toEqual({
      kind: "update",
      path: "a.txt",
      before: { hash: sha256("hello\nworld\n"), bytes: 12 },
      after: { hash: sha256("hello\nthere\n"), bytes: 12 }
    })
    expect(byPath["gone.txt"]).toEqual({
      kind: "delete",
      path: "gone.txt",
      before: { hash: sha256("bye\n"), bytes: 4 },
      after: null
    })
    expect(out.record.summary).toEqual([
      { status: "A", path: "new/b.txt" },
      { status: "M", path: "a.txt" },
      { status: "D", path: "gone.txt" }
    ])
    expect(fs.existsSync(path.join(ws, "gone.txt"))).toBe(false)
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
      expect.objectContaining({ kind: "move", path: "bin/run.sh", moveFrom: "run.sh" })
    ])
    expect(snapshotTree(ws)).toEqual({
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
  it("prints error[code] (stage n) and the path on stderr", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "hello\nworld\n" })
    const before = snapshotTree(ws)
    const r = runCli(["apply", "--workspace", ws], {
      stdin: patch("*** Update File: a.txt", "@@", "-nope", "+x")
    })
    expect(r.status).toBe(1)
    expect(r.stdout).toBe("")
    expect(r.stderr).toMatch(/^error\[context_not_found\] \(stage 5\): /)
    expect(r.stderr).toContain("  path: a.txt\n")
    expect(snapshotTree(ws)).toEqual(before)
  })

  it("--json prints {ok:false,error:{code,stage,paths,message}} only", () => {
    const { ws } = makeSandbox()
    const r = runCli(["apply", "--workspace", ws, "--json"], { stdin: "not a patch" })
    expect(r.status).toBe(1)
    expect(r.stderr).toBe("")
    const out = jsonLine(r.stdout)
    expect(out).toEqual({
      ok: false,
      error: { code: "patch_syntax", stage: 2, paths: [], message: expect.any(String) }
    })
  })

  it("a later failing operation cancels earlier ones (all or nothing)", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "a.txt": "hello\n", "b.txt": "bee\n" })
    const before = snapshotTree(ws)
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
    expect(snapshotTree(ws)).toEqual(before)
  })

  it("refuses a symlinked directory that leads outside the workspace (path_outside_roots)", () => {
    const { outside, ws } = makeSandbox()
    writeTree(outside, { "secret.txt": "secret\n" })
    writeTree(ws, { "a.txt": "hello\n" })
    fs.symlinkSync(outside, path.join(ws, "linkdir"))
    const beforeWs = snapshotTree(ws)
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
      expect(snapshotTree(ws)).toEqual(beforeWs)
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
    expect(r.stderr).toMatch(/^error\[path_outside_roots\] \(stage 3\): /)
    expect(snapshotTree(outside)).toEqual(beforeOutside)
    expect(fs.readlinkSync(path.join(ws, "secret.txt"))).toBe(path.join(outside, "secret.txt"))
  })

  it("refuses .git/** and .forkjoin/** (path_denied_by_policy), also through '..' or a symlink", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { ".git/config": "[core]\n", "a.txt": "hello\n" })
    fs.symlinkSync(".git", path.join(ws, "g"))
    const before = snapshotTree(ws)
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
      expect(snapshotTree(ws)).toEqual(before)
    }
  })
})

describe("forkjoin apply: usage errors (exit 2, nothing on stdout)", () => {
  const { dir, ws } = makeSandbox()
  const patchFile = path.join(dir, "ok.patch")
  fs.writeFileSync(patchFile, patch("*** Add File: x.txt", "+x"))

  it.each([
    ["missing --workspace", ["apply", patchFile, "--json"], /--workspace/],
    ["unknown flag", ["apply", patchFile, "--workspace", ws, "--frobnicate"], /--frobnicate/],
    ["bad --profile", ["apply", patchFile, "--workspace", ws, "--profile", "yolo"], /--profile/],
    ["unreadable patch file", ["apply", path.join(dir, "missing.patch"), "--workspace", ws, "--json"], /missing\.patch/],
    ["missing workspace directory", ["apply", patchFile, "--workspace", path.join(dir, "nope")], /nope/]
  ])("%s", (_name, args, mentions) => {
    const r = runCli(args)
    expect(r.status).toBe(2)
    expect(r.stdout).toBe("")
    expect(r.stderr).toMatch(mentions)
    expect(snapshotTree(ws)).toEqual({})
  })
})
