/**
 * The join's bad input through the built bundle (issue 10, "Bad input"): a changeset exported
 * by a real `--export-only` run is copied next to a plan and tampered with, one way per test;
 * the join refuses that child with the SPEC's status and writes nothing (the workspace tree is
 * identical, no record is committed). Plans with both or neither of `actions` and
 * `changesetFile`, or a `resolve` naming an unknown task, are usage errors before anything
 * runs; rollback and resolve of what does not exist are refused with nothing written.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, removeSandboxes, runCli, workspaceTree } from "./helpers.ts"
import {
  asFiles,
  cliJson,
  copyChangeset,
  editTask,
  exportChangesets,
  filesAt,
  makeCase,
  mergeTransaction,
  outcomeOf,
  planOf,
  recordsOf,
  runJoin
} from "./joinHelpers.ts"

const FILES = { "m/a.txt": "a1\na2\n", "m/b.txt": "b1\n", "other/o.txt": "o\n" }
const M_PATHS = ["m/a.txt", "m/b.txt", "m/new.txt"]

/** The task's changeset entries, in path order: update m/a.txt, delete m/b.txt, add m/new.txt. */
const EXPORTED = editTask("t", ["m"], ["*** Update File: m/a.txt", "@@", " a1", "-a2", "+A2", "*** Delete File: m/b.txt", "*** Add File: m/new.txt", "+new"])

/** The task bringing the copied changeset, as a plan names it. */
const FROM_FILE = { id: "t", mode: "transactional_write", writeScope: ["m"], changesetFile: "cs/changeset.json" }

let namespace: string
beforeAll(() => {
  buildCli()
  namespace = exportChangesets(FILES, [EXPORTED]).namespace("t")
})
afterAll(removeSandboxes)

// The changeset is edited as the untrusted JSON it is.
type Json = any

/**
 * A workspace holding FILES, the exported changeset copied to `<dir>/cs/` and tampered with by
 * `tamper` (the parsed changeset, and the copy's folder for blob edits), and a plan of `tasks`.
 */
const tamperedCase = (tamper: (cs: Json, folder: string) => void, tasks: ReadonlyArray<unknown> = [FROM_FILE], extra: Record<string, unknown> = {}) => {
  const c = makeCase(FILES, planOf(tasks, extra))
  const folder = copyChangeset(namespace, c.dir, "cs")
  const file = path.join(folder, "changeset.json")
  const cs = JSON.parse(fs.readFileSync(file, "utf8"))
  tamper(cs, folder)
  fs.writeFileSync(file, JSON.stringify(cs))
  return { c, before: workspaceTree(c.ws) }
}

const blobOf = (folder: string, hash: string) => path.join(folder, "blobs", "sha256", hash.slice("sha256:".length))

describe("a tampered changeset is refused with nothing written", () => {
  it("control: the untampered copy is applied", () => {
    const { c } = tamperedCase(() => {})
    const { status, stderr, out } = runJoin(c)
    expect(status, stderr).toBe(0)
    expect(outcomeOf(out, "t")).toEqual({ childId: "t", status: "applied", transactionId: mergeTransaction(out.runId, "t") })
    expect(filesAt(c.ws, M_PATHS)).toEqual(asFiles({ "m/a.txt": "a1\nA2\n", "m/b.txt": undefined, "m/new.txt": "new\n" }))
  })

  const cases: ReadonlyArray<readonly [string, (cs: Json, folder: string) => void, string, RegExp]> = [
    ["a postimage path differing from its entry's", (cs) => (cs.entries[0].postimage.path = "m/b.txt"), "invalid_changeset_path", /postimage\.path "m\/b\.txt" differs/],
    ["a preimage path differing from its entry's", (cs) => (cs.entries[1].preimage.path = "m/a.txt"), "invalid_changeset_path", /preimage\.path "m\/a\.txt" differs/],
    ["an empty writeScope", (cs) => (cs.writeScope = []), "scope_violation", /missing_or_invalid_write_scope/],
    ["a writeScope that is not normalized", (cs) => (cs.writeScope = ["m/../m"]), "scope_violation", /missing_or_invalid_write_scope/],
    ["an entry outside its writeScope", (cs) => {
      cs.entries[2].path = "other/new.txt"
      cs.entries[2].postimage.path = "other/new.txt"
    }, "scope_violation", /"other\/new\.txt" is outside the changeset's writeScope/],
    ["a writeScope wider than the task's declared scope", (cs) => (cs.writeScope = ["m", "other"]), "scope_violation", /\["other"\] is not within the task's declared scope/],
    ["an unknown schemaVersion", (cs) => (cs.schemaVersion = 2), "invalid_changeset", /schemaVersion 2/],
    // The reason must say the blob is corrupt: it is there, so "missing" would send the reader looking for a file.
    ["a blob whose bytes do not match its hash", (cs, folder) => fs.writeFileSync(blobOf(folder, cs.entries[0].postimage.hash), "a1\nEVIL\n"), "invalid_changeset", /does not hold the bytes its hash names|corrupt/i],
    ["a missing blob", (cs, folder) => fs.rmSync(blobOf(folder, cs.entries[2].postimage.hash)), "invalid_changeset", /is missing/],
    ["two entries for one path", (cs) => cs.entries.push(cs.entries[0]), "invalid_changeset", /"m\/a\.txt" is also the path of an entry/],
    ["a '..' path", (cs) => {
      cs.entries[2].path = "m/../../escape.txt"
      cs.entries[2].postimage.path = "m/../../escape.txt"
    }, "invalid_changeset_path", /"m\/\.\.\/\.\.\/escape\.txt" is not a normalized workspace-relative path/],
    ["an absolute path", (cs) => {
      cs.entries[2].path = "/tmp/abs.txt"
      cs.entries[2].postimage.path = "/tmp/abs.txt"
    }, "invalid_changeset_path", /"\/tmp\/abs\.txt" is not a normalized/],
    ["a path that is not normalized", (cs) => {
      cs.entries[2].path = "m//new.txt"
      cs.entries[2].postimage.path = "m//new.txt"
    }, "invalid_changeset_path", /"m\/\/new\.txt" is not a normalized/],
    ["a moveFrom escaping the workspace", (cs) => {
      cs.entries[0].kind = "move"
      cs.entries[0].moveFrom = "../a.txt"
    }, "invalid_changeset_path", /moveFrom "\.\.\/a\.txt"/],
    ["a childId that is not the task id", (cs) => (cs.childId = "someone-else"), "invalid_changeset", /belongs to child "someone-else"/],
    ["a taskId that is not the task id", (cs) => (cs.taskId = "someone-else"), "invalid_changeset", /not to task "t"/],
    ["a postimage not listed in blobs.hashes", (cs) => (cs.blobs.hashes = []), "invalid_changeset", /blobs\.hashes/],
    ["an unknown key", (cs) => (cs.trustMe = true), "invalid_changeset", /trustMe/],
    ["an entry whose kind contradicts its sides", (cs) => (cs.entries[1].kind = "update"), "invalid_changeset", /entries\.1\.postimage: a update entry needs a postimage/]
  ]
  for (const [name, tamper, status, reason] of cases) {
    it(`${name}: ${status}`, () => {
      const { c, before } = tamperedCase(tamper)
      const { status: exit, out } = runJoin(c)
      expect(exit).toBe(1)
      const o = outcomeOf(out, "t")
      expect(o.status).toBe(status)
      expect(o.reason).toMatch(reason)
      expect(o.transactionId).toBeUndefined()
      expect(out.mergeExecution.status).toBe("failed")
      expect(out.finish).toMatchObject({ ok: false, code: "merge_failed" })
      expect(workspaceTree(c.ws)).toEqual(before)
      expect(recordsOf(c.ws)).toEqual([])
    })
  }

  it("a changeset.json that is not JSON is invalid_changeset, an absent one missing_changeset, each saying so", () => {
    const cases = [
      [(file: string) => fs.writeFileSync(file, "{ not json"), "invalid_changeset", /is not JSON/],
      [
        (file: string) => fs.writeFileSync(file, "{\n  \"schemaVersion\": 1\n    \"childId\": \"c\"\n}\n"),
        "invalid_changeset",
        /is not JSON \(line 3, column 5: expected ',' or '\}', found '"'\)/
      ],
      [(file: string) => fs.rmSync(file), "missing_changeset", /does not exist/]
    ] as const
    for (const [write, expected, reason] of cases) {
      const { c, before } = tamperedCase(() => {})
      write(path.join(c.dir, "cs", "changeset.json"))
      const { status, out } = runJoin(c)
      expect(status).toBe(1)
      expect(outcomeOf(out, "t").status).toBe(expected)
      expect(outcomeOf(out, "t").reason).toMatch(reason)
      expect(out.mergePlan.missingChangesetResultIds).toEqual(["t"])
      expect(workspaceTree(c.ws)).toEqual(before)
      expect(recordsOf(c.ws)).toEqual([])
    }
  })

  it("a tampered child leaves its paths untouched while a sibling is applied", () => {
    const sibling = editTask("s", ["other"], ["*** Update File: other/o.txt", "@@", "-o", "+O"])
    const { c } = tamperedCase((cs) => (cs.entries[0].postimage.path = "m/b.txt"), [FROM_FILE, sibling])
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    expect(out.mergeExecution.status).toBe("partial")
    expect(out.mergeExecution.outcomes.map((o) => [o.childId, o.status])).toEqual([["t", "invalid_changeset_path"], ["s", "applied"]])
    expect(filesAt(c.ws, [...M_PATHS, "other/o.txt"])).toEqual(asFiles({ "m/a.txt": "a1\na2\n", "m/b.txt": "b1\n", "m/new.txt": undefined, "other/o.txt": "O\n" }))
    expect(recordsOf(c.ws).map((r) => r.transactionId)).toEqual([mergeTransaction(out.runId, "s")])
  })

  it("in an atomic join a tampered child keeps every sibling out too", () => {
    const sibling = editTask("s", ["other"], ["*** Update File: other/o.txt", "@@", "-o", "+O"])
    const { c, before } = tamperedCase((cs) => (cs.childId = "s"), [FROM_FILE, sibling], { atomic: true })
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    expect(outcomeOf(out, "t").status).toBe("invalid_changeset")
    expect(outcomeOf(out, "s").transactionId).toBeUndefined()
    expect(workspaceTree(c.ws)).toEqual(before)
    expect(recordsOf(c.ws)).toEqual([])
  })
})

describe("plans refused before anything runs (exit 2)", () => {
  const child = editTask("t", ["m"], ["*** Update File: m/a.txt", "@@", "-a1", "+A1"])
  const cases: ReadonlyArray<readonly [string, unknown, RegExp]> = [
    ["a task with both actions and changesetFile", planOf([{ ...child, changesetFile: "cs/changeset.json" }]), /\$\.tasks\[0\].*exactly one of "actions".*"changesetFile"/],
    ["a task with neither actions nor changesetFile", planOf([{ id: "t", mode: "transactional_write", writeScope: ["m"] }]), /\$\.tasks\[0\].*exactly one of "actions"/],
    ["a read-only task bringing a changeset", planOf([{ id: "t", mode: "read_only", changesetFile: "cs/changeset.json" }]), /\$\.tasks\[0\]\.changesetFile/],
    ["a resolve naming an unknown task", planOf([child], { resolve: [{ childId: "ghost", resolution: "apply" }] }), /\$\.resolve\[0\]\.childId.*"ghost"/],
    ["a resolve naming a read-only task", planOf([child, { id: "ro", mode: "read_only", actions: [{ finish: {} }] }], { resolve: [{ childId: "ro", resolution: "discard" }] }), /\$\.resolve\[0\]\.childId.*read_only/],
    ["a content resolution without content", planOf([child], { resolve: [{ childId: "t", resolution: "content" }] }), /\$\.resolve\[0\]\.content/],
    ["a between edit escaping the workspace", planOf([child], { between: [{ write: { path: "../x.txt", content: "x" } }] }), /\$\.between\[0\]\.write\.path/],
    ["a verify command with no program", planOf([child], { verify: { command: [], timeoutMs: 1000 } }), /\$\.verify\.command/]
  ]
  for (const [name, plan, message] of cases) {
    it(name, () => {
      const c = makeCase(FILES, plan)
      const before = workspaceTree(c.ws)
      const r = runCli(["run", c.planFile, "--workspace", c.ws, "--json"])
      expect(r.status).toBe(2)
      expect(r.stderr).toBe("")
      const { error } = JSON.parse(r.stdout)
      expect(error.code).toBe("usage_invalid")
      expect(error.message).toMatch(message)
      expect(workspaceTree(c.ws)).toEqual(before)
      expect(fs.existsSync(path.join(c.ws, ".forkjoin", "runs"))).toBe(false)
      expect(recordsOf(c.ws)).toEqual([])
    })
  }
})

describe("rollback and resolve of what does not exist", () => {
  it("rollback of an unknown transaction is unknown_transaction, nothing written", () => {
    const c = makeCase(FILES, planOf([editTask("t", ["m"], ["*** Update File: m/a.txt", "@@", "-a1", "+A1"])]))
    // In a workspace without history, and in one with a join recorded.
    for (const round of [0, 1]) {
      if (round === 1) expect(runJoin(c).status).toBe(0)
      const before = workspaceTree(c.ws)
      const records = recordsOf(c.ws)
      const r = cliJson(["rollback", "subagent_merge:run-nope/t", "--workspace", c.ws])
      expect(r.status).toBe(1)
      expect(r.json).toMatchObject({ ok: false, error: { code: "unknown_transaction" } })
      expect(workspaceTree(c.ws)).toEqual(before)
      expect(recordsOf(c.ws)).toEqual(records)
    }
  })

  it("a malformed transaction id, or resolve with two resolutions, is a usage error", () => {
    const c = makeCase(FILES, {})
    const before = workspaceTree(c.ws)
    const bad = runCli(["rollback", "no spaces allowed", "--workspace", c.ws])
    expect(bad.status).toBe(2)
    expect(bad.stdout).toBe("")
    expect(bad.stderr).toMatch(/TARGET/)
    const both = runCli(["resolve", "run-x/t:m/a.txt", "--apply", "--discard", "--workspace", c.ws])
    expect(both.status).toBe(2)
    expect(both.stderr).toMatch(/exactly one of --apply, --discard or --content/)
    const noFile = runCli(["resolve", "run-x/t:m/a.txt", "--content", path.join(c.outside, "absent.txt"), "--workspace", c.ws])
    expect(noFile.status).toBe(2)
    expect(noFile.stderr).toMatch(/cannot read --content file/)
    expect(workspaceTree(c.ws)).toEqual(before)
  })

  it("resolve of an unknown conflict is unknown_conflict, nothing written", () => {
    const c = makeCase(FILES, {})
    const before = workspaceTree(c.ws)
    const r = cliJson(["resolve", "run-x/t:m/a.txt", "--apply", "--workspace", c.ws])
    expect(r.status).toBe(1)
    expect(r.json).toMatchObject({ ok: false, error: { code: "unknown_conflict" } })
    expect(workspaceTree(c.ws)).toEqual(before)
  })
})
