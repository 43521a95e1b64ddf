/**
 * Syntax-aware merges through the built CLI: how a join merged each path in `run --json`, the
 * run's text, `history diff` (text and `--json`); a clean merge naming a key twice held as
 * `duplicate_member` in `forkjoin conflicts`; and that the grammar runtime (web-tree-sitter)
 * loads only for a two-sided merge of a file with a grammar, never for `--version`, `apply` or
 * a join without one (a `--require` tracer records what the process loads).
 */
import { ChildOutcome } from "@forkjoin/schema/MergeRun"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import * as Colour from "../src/internal/colour.ts"
import { mergeWarnings } from "../src/Run.ts"
import { makeSandbox, runCli } from "./helpers.ts"
import { cliJson, editTask, makeCase, mergeTransaction, outcomeOf, planOf, runJoin, textAt } from "./joinHelpers.ts"

const APP = "import { a } from \"./a\"\n\nexport const x = a\n"
const addImport = (file: string, name: string) => [`*** Update File: ${file}`, "@@", " import { a } from \"./a\"", `+import { ${name} } from "./${name}"`]

// A tracer loaded before the CLI: every module request naming tree-sitter goes to FJ_TRACE.
const tracer = (dir: string) => {
  const file = path.join(dir, "trace.cjs")
  fs.writeFileSync(
    file,
    "const Module = require('node:module'); const fs = require('node:fs'); const load = Module._load;\n" +
      "Module._load = function (request, ...rest) {\n" +
      "  if (/tree-sitter/.test(request)) fs.appendFileSync(process.env.FJ_TRACE, request + '\\n');\n" +
      "  return load.call(this, request, ...rest);\n" +
      "};\n"
  )
  const log = path.join(dir, "trace.log")
  fs.writeFileSync(log, "")
  return { env: { NODE_OPTIONS: `--require ${file}`, FJ_TRACE: log }, loaded: () => fs.readFileSync(log, "utf8").split("\n").filter((l) => l !== "") }
}

describe("a join's merges by syntax tree, through the CLI", () => {
  it("says how each path was merged in run --json, the run's text and history diff, and loads the grammar runtime", () => {
    const c = makeCase({ "src/app.ts": APP }, planOf([editTask("one", ["src"], addImport("src/app.ts", "b")), editTask("two", ["src"], addImport("src/app.ts", "c"))]))
    const trace = tracer(c.dir)
    const { status, stderr, out } = runJoin(c, { env: trace.env })
    expect(status, stderr).toBe(0)
    expect(outcomeOf(out, "two")).toEqual({
      childId: "two",
      status: "auto_merged",
      transactionId: mergeTransaction(out.runId, "two"),
      autoMergedPaths: ["src/app.ts"],
      mergedPaths: [{ path: "src/app.ts", method: "structured", language: "typescript" }]
    })
    expect(textAt(c.ws, "src/app.ts")).toContain("import { c } from \"./c\"\n")
    expect(trace.loaded()).toContain("web-tree-sitter")

    const diff = cliJson(["history", "diff", mergeTransaction(out.runId, "two"), "--workspace", c.ws])
    expect(diff.json.items.map((i: any) => [i.path, i.merge])).toEqual([["src/app.ts", { method: "structured", language: "typescript" }]])
    const text = runCli(["history", "diff", mergeTransaction(out.runId, "two"), "--workspace", c.ws])
    expect(text.stdout).toContain("# src/app.ts merged (structured, typescript)\n")
    // The first child wrote its own content: nothing says it was merged.
    expect(runCli(["history", "diff", mergeTransaction(out.runId, "one"), "--workspace", c.ws]).stdout).not.toContain("merged (")
  })

  it("a child merged by syntax just before a crash is reported so after the resume, from its record", () => {
    const c = makeCase({ "src/app.ts": APP }, planOf([editTask("one", ["src"], addImport("src/app.ts", "b")), editTask("two", ["src"], addImport("src/app.ts", "c"))]))
    // Killed after the second child's transaction committed, before its outcome was stored.
    const killed = runCli(["run", c.planFile, "--workspace", c.ws, "--json"], { env: { FORKJOIN_FAULT: "merge:after-child:2" } })
    expect(killed.signal, killed.stderr).toBe("SIGKILL")
    const runId = cliJson(["status", "--workspace", c.ws]).json.interruptedRuns[0].runId
    const resumed = cliJson(["run", "--resume", runId, "--workspace", c.ws])
    expect(resumed.status, resumed.stderr).toBe(0)
    expect(resumed.json.mergeExecution.outcomes[1]).toEqual({
      childId: "two",
      status: "auto_merged",
      transactionId: mergeTransaction(runId, "two"),
      autoMergedPaths: ["src/app.ts"],
      mergedPaths: [{ path: "src/app.ts", method: "structured", language: "typescript" }]
    })
  })

  it("the run's text names the method beside each merged path", () => {
    const c = makeCase({ "src/app.ts": APP }, planOf([editTask("one", ["src"], addImport("src/app.ts", "b")), editTask("two", ["src"], addImport("src/app.ts", "c"))]))
    const r = runCli(["run", c.planFile, "--workspace", c.ws])
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/two +auto_merged +merged: src\/app\.ts \(structured, typescript\)\n/)
  })

  it("a clean line merge that names a JSON key twice is held as duplicate_member, and forkjoin conflicts says so", () => {
    const base = "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3,\n  \"d\": 4,\n  \"e\": 5\n}\n"
    const c = makeCase(
      { "cfg/settings.json": base },
      planOf([
        editTask("one", ["cfg"], ["*** Update File: cfg/settings.json", "@@", "   \"a\": 1,", "+  \"k\": 11,"]),
        editTask("two", ["cfg"], ["*** Update File: cfg/settings.json", "@@", "   \"d\": 4,", "+  \"k\": 12,"])
      ])
    )
    const { out } = runJoin(c)
    expect(outcomeOf(out, "two")).toMatchObject({ status: "conflicted_unresolved", conflictPaths: ["cfg/settings.json"] })
    expect(textAt(c.ws, "cfg/settings.json")).toBe(base.replace("  \"a\": 1,\n", "  \"a\": 1,\n  \"k\": 11,\n"))
    const listed = cliJson(["conflicts", "--workspace", c.ws, "--run", out.runId])
    expect(listed.json.conflicts.map((x: any) => [x.path, x.reason])).toEqual([["cfg/settings.json", "duplicate_member"]])
    expect(listed.json.conflicts[0].text).toMatch(/^the workspace and this child changed this file in different places/)
    expect(runCli(["conflicts", "--workspace", c.ws, "--run", out.runId]).stdout).toContain("duplicate_member")
  })
})

describe("the grammar runtime loads only for a two-sided merge of a file with a grammar", () => {
  it("forkjoin --version, apply and a join without such a merge load none of it", () => {
    const { dir, ws } = makeSandbox()
    const trace = tracer(dir)
    expect(runCli(["--version"], { env: trace.env }).status).toBe(0)
    fs.writeFileSync(path.join(ws, "app.ts"), APP)
    const applied = runCli(["apply", "--workspace", ws], { env: trace.env, stdin: ["*** Begin Patch", ...addImport("app.ts", "b"), "*** End Patch"].join("\n") })
    expect(applied.status, applied.stderr).toBe(0)
    const c = makeCase(
      { "src/one.ts": APP, "src/two.ts": APP },
      planOf([editTask("one", ["src"], addImport("src/one.ts", "b")), editTask("two", ["src"], addImport("src/two.ts", "c"))])
    )
    const { status, out } = runJoin(c, { env: trace.env })
    expect(status).toBe(0)
    expect(out.mergeExecution.outcomes.map((o) => o.status)).toEqual(["applied", "applied"])
    expect(trace.loaded()).toEqual([])
  })
})

describe("forkjoin run's merge warnings", () => {
  it("prints a grammar warning once however many children it concerned, and nothing without one", () => {
    const warning = { code: "grammar_unavailable", message: "the typescript grammar could not be loaded: gone; this child's typescript files were merged by lines only" }
    const outcomes = Schema.decodeUnknownSync(Schema.Array(ChildOutcome))([
      { childId: "one", status: "conflicted_unresolved", warnings: [warning] },
      { childId: "two", status: "auto_merged", warnings: [warning] },
      { childId: "three", status: "applied" }
    ])
    expect(mergeWarnings(outcomes, Colour.plain)).toBe(`warning: ${warning.message}\n`)
    expect(mergeWarnings(outcomes.slice(2), Colour.plain)).toBe("")
  })
})
