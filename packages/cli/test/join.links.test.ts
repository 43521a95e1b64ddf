/**
 * The join against links and hostile files, through the built bundle: a changeset exported by
 * a real `--export-only` run is joined into a workspace where a folder on its paths became a
 * link (swapped in after the export), where a link leads to `.git` or out of the workspace; a
 * plan's `between` edits aim through links and at denied names; a `changesetFile` or one of
 * its blobs is a link to a named pipe, `/dev/zero`, a huge file, missing or not JSON. Each is
 * refused with its own status and words, writes nothing and never hangs; a link inside the
 * scope is followed and history names the real file.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, removeSandboxes, runCliAsync } from "./helpers.ts"
import { cliJson, copyChangeset, editTask, exportChangesets, makeCase, outcomeOf, planOf, recordsOf, RunJson, runJoin, textAt } from "./joinHelpers.ts"
import * as Schema from "effect/Schema"

/** In the exporting workspace `sub/link` is a real folder; the child edits `sub/link/a.txt`. */
const EXPORTED = editTask("t", ["sub"], ["*** Update File: sub/link/a.txt", "@@", "-a1", "+CHILD"])
const FROM_FILE = { id: "t", mode: "transactional_write", writeScope: ["sub"], changesetFile: "cs/changeset.json" }

let namespace: string
beforeAll(() => {
  buildCli()
  namespace = exportChangesets({ "sub/link/a.txt": "a1\n" }, [EXPORTED]).namespace("t")
})
afterAll(removeSandboxes)

/** A workspace holding `files`, then `links` (relative path → link target), the exported changeset copied to `<dir>/cs/`. */
const linkedCase = (files: Readonly<Record<string, string>>, links: Readonly<Record<string, string>>, tasks: ReadonlyArray<unknown> = [FROM_FILE], extra: Record<string, unknown> = {}) => {
  const c = makeCase(files, planOf(tasks, extra))
  for (const [rel, target] of Object.entries(links)) {
    fs.mkdirSync(path.dirname(path.join(c.ws, rel)), { recursive: true })
    fs.symlinkSync(target, path.join(c.ws, rel))
  }
  const folder = copyChangeset(namespace, c.dir, "cs")
  return { c, folder }
}

const blobFile = (folder: string): string => {
  const dir = path.join(folder, "blobs", "sha256")
  const [name] = fs.readdirSync(dir)
  return path.join(dir, name!)
}

const decodeRun = Schema.decodeUnknownSync(RunJson)

/** `forkjoin run` without blocking this process: a join that hangs fails the test by its timeout instead of hanging the worker. */
const runJoinAsync = async (c: { readonly ws: string; readonly planFile: string }) => {
  const r = await runCliAsync(["run", c.planFile, "--workspace", c.ws, "--json"], {})
  if (r.stdout === "") throw new Error(`forkjoin run printed nothing (exit ${r.status}): ${r.stderr}`)
  return { status: r.status, out: decodeRun(JSON.parse(r.stdout)) }
}

describe("the join resolves links and checks the scope where writes land", () => {
  it("a folder under the scope swapped for a link out of the scope after the export: scope_violation, nothing written", () => {
    const { c } = linkedCase({ "docs/a.txt": "a1\n" }, { "sub/link": "../docs" })
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    const o = outcomeOf(out, "t")
    expect(o.status).toBe("scope_violation")
    expect(o.reason).toMatch(/sub\/link\/a\.txt leads through a link to docs\/a\.txt, outside the task's writeScope \["sub"\]/)
    expect(o.transactionId).toBeUndefined()
    expect(textAt(c.ws, "docs/a.txt")).toBe("a1\n")
    expect(recordsOf(c.ws)).toEqual([])
  })

  it("the same in an atomic join: scope_violation, nothing written", () => {
    const { c } = linkedCase({ "docs/a.txt": "a1\n" }, { "sub/link": "../docs" }, [FROM_FILE], { atomic: true })
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    expect(outcomeOf(out, "t").status).toBe("scope_violation")
    expect(textAt(c.ws, "docs/a.txt")).toBe("a1\n")
    expect(recordsOf(c.ws)).toEqual([])
  })

  it("the file itself swapped for a link to a file outside the scope: path_refused, not written through", () => {
    const { c } = linkedCase({ "docs/a.txt": "a1\n" }, { "sub/link/a.txt": "../../docs/a.txt" })
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    const o = outcomeOf(out, "t")
    expect(o.transactionId).toBeUndefined()
    expect(o.status).toBe("path_refused")
    expect(o.reason).toMatch(/sub\/link\/a\.txt is a symbolic link, which the join never writes through/)
    expect(textAt(c.ws, "docs/a.txt")).toBe("a1\n")
    expect(fs.lstatSync(path.join(c.ws, "sub/link/a.txt")).isSymbolicLink()).toBe(true)
    expect(recordsOf(c.ws)).toEqual([])
  })

  it("a link inside the scope to a folder inside it is followed, and history names the real file", () => {
    const { c } = linkedCase({ "sub/real/a.txt": "a1\n" }, { "sub/link": "real" })
    const { status, stderr, out } = runJoin(c)
    expect(status, stderr).toBe(0)
    expect(outcomeOf(out, "t").status).toBe("applied")
    expect(textAt(c.ws, "sub/real/a.txt")).toBe("CHILD\n")
    const paths = recordsOf(c.ws).flatMap((r) => r.changes.map((ch) => ch.path))
    expect(paths).toEqual(["sub/real/a.txt"])
  })

  it("a link to .git under the scope: path_refused (not baseline_drift), .git untouched", () => {
    const { c } = linkedCase({ ".git/a.txt": "a1\n" }, { "sub/link": "../.git" })
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    const o = outcomeOf(out, "t")
    expect(o.status).toBe("path_refused")
    expect(o.reason).toMatch(/sub\/link\/a\.txt is refused by the workspace's safety rules \(path_denied_by_policy/)
    expect(o.driftPaths).toBeUndefined()
    expect(fs.readFileSync(path.join(c.ws, ".git/a.txt"), "utf8")).toBe("a1\n")
    expect(recordsOf(c.ws)).toEqual([])
  })

  it("a link out of the workspace under the scope: path_refused, the outside file untouched", () => {
    const { c } = linkedCase({}, {})
    fs.writeFileSync(path.join(c.outside, "a.txt"), "a1\n")
    fs.mkdirSync(path.join(c.ws, "sub"))
    fs.symlinkSync(c.outside, path.join(c.ws, "sub/link"))
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    const o = outcomeOf(out, "t")
    expect(o.status).toBe("path_refused")
    expect(o.reason).toMatch(/path_outside_roots/)
    expect(fs.readFileSync(path.join(c.outside, "a.txt"), "utf8")).toBe("a1\n")
  })
})

describe("between edits go through the engine's path policy", () => {
  const task = editTask("t", ["m"], ["*** Add File: m/new.txt", "+new"])
  // Denied names are refused by the plan's own checks (usage_invalid); links by the engine's resolution.
  const cases: ReadonlyArray<readonly [string, string, Record<string, string>, string]> = [
    [".git/config", ".git/config", {}, "usage_invalid"],
    ["a nested .git", "pkg/.git/config", {}, "usage_invalid"],
    [".forkjoin", ".forkjoin/identity.json", {}, "usage_invalid"],
    ["a link to .git", "g/config", { g: ".git" }, "path_denied_by_policy"],
    ["a link to a nested .git", "p/config", { p: "pkg/.git" }, "path_denied_by_policy"],
    ["a link to .forkjoin", "f/identity.json", { f: ".forkjoin" }, "path_denied_by_policy"],
    ["a link out of the workspace", "out/x.txt", { out: "../outside" }, "path_outside_roots"],
    ["a final link to a file out of the workspace", "x.txt", { "x.txt": "../outside/x.txt" }, "path_outside_roots"]
  ]
  for (const [name, target, links, code] of cases) {
    it(`${name}: refused with ${code} before any child runs, nothing written`, () => {
      const c = makeCase({ ".git/config": "[core]\n", "pkg/.git/config": "[core]\n" }, planOf([task], { between: [{ write: { path: target, content: "EVIL\n" } }] }))
      for (const [rel, to] of Object.entries(links)) fs.symlinkSync(to, path.join(c.ws, rel))
      const r = cliJson(["run", c.planFile, "--workspace", c.ws])
      expect(r.status).not.toBe(0)
      expect(r.json.ok).toBe(false)
      expect(r.json.error.code).toBe(code)
      expect(r.json.error.message).toMatch(/between/)
      expect(fs.readFileSync(path.join(c.ws, ".git/config"), "utf8")).toBe("[core]\n")
      expect(fs.readFileSync(path.join(c.ws, "pkg/.git/config"), "utf8")).toBe("[core]\n")
      expect(fs.existsSync(path.join(c.outside, "x.txt"))).toBe(false)
      expect(fs.existsSync(path.join(c.ws, ".forkjoin", "identity.json")) ? fs.readFileSync(path.join(c.ws, ".forkjoin", "identity.json"), "utf8") : "").not.toMatch(/EVIL/)
      expect(textAt(c.ws, "m/new.txt")).toBeUndefined()
    })
  }

  it("control: a between edit inside the workspace is still written (the join sees the drift)", () => {
    const c = makeCase({ "m/a.txt": "a1\n" }, planOf([editTask("t", ["m"], ["*** Update File: m/a.txt", "@@", "-a1", "+A1"])], { between: [{ write: { path: "m/a.txt", content: "outside\n" } }] }))
    const { out } = runJoin(c)
    expect(outcomeOf(out, "t").status).toBe("baseline_drift")
    expect(textAt(c.ws, "m/a.txt")).toBe("outside\n")
  })
})

describe("a changesetFile and its blobs are regular files, read without following links", () => {
  const hostileBlob: ReadonlyArray<readonly [string, (file: string, dir: string) => void, RegExp]> = [
    ["a link to a named pipe", (file, dir) => {
      const fifo = path.join(dir, "pipe")
      execFileSync("mkfifo", [fifo])
      fs.rmSync(file)
      fs.symlinkSync(fifo, file)
    }, /symbolic link, not a regular file/],
    ["a named pipe", (file) => {
      fs.rmSync(file)
      execFileSync("mkfifo", [file])
    }, /named pipe \(FIFO\), not a regular file/],
    ["a link to /dev/zero", (file) => {
      fs.rmSync(file)
      fs.symlinkSync("/dev/zero", file)
    }, /symbolic link, not a regular file/],
    ["a huge (sparse) file", (file) => fs.truncateSync(file, 300 * 1024 * 1024), /above the limit/]
  ]
  for (const [name, plant, reason] of hostileBlob) {
    it(`a blob that is ${name}: invalid_changeset, no hang, nothing written`, async () => {
      const { c, folder } = linkedCase({ "sub/link/a.txt": "a1\n" }, {})
      plant(blobFile(folder), c.dir)
      const { status, out } = await runJoinAsync(c)
      expect(status).toBe(1)
      const o = outcomeOf(out, "t")
      expect(o.status).toBe("invalid_changeset")
      expect(o.reason).toMatch(reason)
      expect(o.reason).toMatch(/blobs must be regular files/)
      expect(textAt(c.ws, "sub/link/a.txt")).toBe("a1\n")
      expect(recordsOf(c.ws)).toEqual([])
    })
  }

  it("a changesetFile that is a link to a named pipe: invalid_changeset, no hang", async () => {
    const { c, folder } = linkedCase({ "sub/link/a.txt": "a1\n" }, {})
    const fifo = path.join(c.dir, "pipe")
    execFileSync("mkfifo", [fifo])
    fs.rmSync(path.join(folder, "changeset.json"))
    fs.symlinkSync(fifo, path.join(folder, "changeset.json"))
    const { status, out } = await runJoinAsync(c)
    expect(status).toBe(1)
    const o = outcomeOf(out, "t")
    expect(o.status).toBe("invalid_changeset")
    expect(o.reason).toMatch(/changesetFile .*changeset\.json was not read: it is a symbolic link, not a regular file/)
  })

  it("a missing changesetFile: missing_changeset saying the file does not exist (not that the child did not finish)", () => {
    const { c, folder } = linkedCase({ "sub/link/a.txt": "a1\n" }, {})
    fs.rmSync(path.join(folder, "changeset.json"))
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    const o = outcomeOf(out, "t")
    expect(o.status).toBe("missing_changeset")
    expect(o.reason).toMatch(/changesetFile .*changeset\.json does not exist/)
    expect(o.reason).not.toMatch(/did not finish/)
  })

  it("a changesetFile that is not JSON: invalid_changeset saying so", () => {
    const { c, folder } = linkedCase({ "sub/link/a.txt": "a1\n" }, {})
    fs.writeFileSync(path.join(folder, "changeset.json"), "{ not json")
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    const o = outcomeOf(out, "t")
    expect(o.status).toBe("invalid_changeset")
    expect(o.reason).toMatch(/is not JSON/)
    expect(textAt(c.ws, "sub/link/a.txt")).toBe("a1\n")
  })
})

describe("what a child did that cannot be recorded", () => {
  it("an action nested too deeply to record is artifact_unserializable, not a .forkjoin permission problem", () => {
    const deep = `${"[".repeat(200_000)}${"]".repeat(200_000)}`
    const plan = `{"schemaVersion":1,"tasks":[{"id":"t","mode":"read_only","actions":[{"run_subagents":${deep}},{"finish":{}}]}]}`
    const c = makeCase({ "m/a.txt": "a\n" }, plan)
    const r = cliJson(["run", c.planFile, "--workspace", c.ws])
    expect(r.status).toBe(1)
    expect(r.json.error.code).toBe("artifact_unserializable")
    expect(r.json.error.message).toMatch(/cannot be recorded as JSON/)
    expect(r.json.error.message).not.toMatch(/writable/)
    expect(textAt(c.ws, "m/a.txt")).toBe("a\n")
  })
})
