/**
 * `forkjoin schema plan|changeset|record|codex-turn-diff|claude-tool-event|merge-file|agents|agent`:
 * the printed JSON Schemas are draft 2020-12 documents with an `$id`, and they accept what
 * forkjoin accepts and prints — the README's example plan, the example in `forkjoin run --help`,
 * a changeset `run --export-only` exported, records `apply` and `history ingest` printed, the
 * turn diffs and Claude events the ingest tests feed `history ingest`, the lines `merge-file
 * --json`, `agents --json` and `agents ID --json` printed — and refuse what its decoders refuse. There is no JSON
 * Schema validator among the dependencies, so `validate` below implements the keywords the
 * documents use and throws on any other (a new keyword fails the test instead of passing it
 * unchecked); every example is also decoded with the Effect schema, the final authority.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { decode as decodePlan } from "@forkjoin/runtime/RunPlan"
import { decodeUntrustedChangeset } from "@forkjoin/schema/Changeset"
import { PatchHistoryRecord } from "@forkjoin/schema/PatchHistoryRecord"
import { AgentShow, AgentsList } from "@forkjoin/schema/WorkspaceIndex"
import * as Cause from "effect/Cause"
import { CliError, Command } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { startModelServer, type Conversation, type Turn } from "../../drivers/test/support/modelServer.ts"
import { MergeFileFailure, MergeFileReport } from "../src/MergeFileReport.ts"
import { documentOf, documents, render, type SchemaName } from "../src/Schema.ts"
import { schema as schemaCommand } from "../src/SchemaCommand.ts"
import { buildCli, makeSandbox, patch, removeSandboxes, ROOT, runCli, runCliAsync, writeTree } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

// -------------------------------------------------------------------------------------
// a small JSON Schema (draft 2020-12) validator
// -------------------------------------------------------------------------------------

type Doc = { readonly [k: string]: unknown }

const ANNOTATIONS = new Set([
  "$schema",
  "$id",
  "$defs",
  "$comment",
  "title",
  "description",
  "default",
  "examples",
  "contentMediaType"
])

const typeOk = (t: string, v: unknown): boolean => {
  switch (t) {
    case "null":
      return v === null
    case "boolean":
      return typeof v === "boolean"
    case "string":
      return typeof v === "string"
    case "number":
      return typeof v === "number" && Number.isFinite(v)
    case "integer":
      return Number.isInteger(v)
    case "array":
      return Array.isArray(v)
    case "object":
      return typeof v === "object" && v !== null && !Array.isArray(v)
    default:
      throw new Error(`unknown JSON Schema type ${t}`)
  }
}

/** The problems of `value` against `root` (empty: valid), each with its JSON path. */
const validate = (root: Doc, value: unknown): Array<string> => {
  const resolve = (ref: string): unknown => {
    const m = /^#\/\$defs\/(.+)$/.exec(ref)
    const defs = root["$defs"] as Record<string, unknown> | undefined
    if (m === null || defs?.[m[1]!] === undefined) throw new Error(`cannot resolve ${ref}`)
    return defs[m[1]!]
  }
  const check = (schema: unknown, v: unknown, at: string): Array<string> => {
    if (schema === true) return []
    if (schema === false) return [`${at}: nothing is allowed here`]
    const s = schema as Record<string, unknown>
    const out: Array<string> = []
    const isObject = typeOk("object", v)
    const o = v as Record<string, unknown>
    for (const [k, kv] of Object.entries(s)) {
      switch (k) {
        case "type": {
          const types = Array.isArray(kv) ? kv as Array<string> : [kv as string]
          if (!types.some((t) => typeOk(t, v))) out.push(`${at}: expected ${types.join("|")}, got ${JSON.stringify(v)}`)
          break
        }
        case "enum":
          if (!(kv as Array<unknown>).some((e) => JSON.stringify(e) === JSON.stringify(v))) {
            out.push(`${at}: ${JSON.stringify(v)} is not one of ${JSON.stringify(kv)}`)
          }
          break
        case "const":
          if (JSON.stringify(kv) !== JSON.stringify(v)) out.push(`${at}: expected ${JSON.stringify(kv)}`)
          break
        case "properties":
          if (isObject) {
            for (const [p, ps] of Object.entries(kv as Record<string, unknown>)) {
              if (Object.hasOwn(o, p)) out.push(...check(ps, o[p], `${at}.${p}`))
            }
          }
          break
        case "required":
          if (isObject) for (const p of kv as Array<string>) if (!Object.hasOwn(o, p)) out.push(`${at}: missing key ${p}`)
          break
        case "additionalProperties":
          if (isObject) {
            const known = Object.keys((s["properties"] ?? {}) as object)
            const patterns = Object.keys((s["patternProperties"] ?? {}) as object).map((p) => new RegExp(p, "u"))
            for (const p of Object.keys(o)) {
              if (!known.includes(p) && !patterns.some((r) => r.test(p))) out.push(...check(kv, o[p], `${at}.${p}`))
            }
          }
          break
        case "patternProperties":
          if (isObject) {
            for (const [p, ps] of Object.entries(kv as Record<string, unknown>)) {
              for (const key of Object.keys(o)) if (new RegExp(p, "u").test(key)) out.push(...check(ps, o[key], `${at}.${key}`))
            }
          }
          break
        case "propertyNames":
          if (isObject) for (const key of Object.keys(o)) out.push(...check(kv, key, `${at}[key ${key}]`))
          break
        case "minProperties":
          if (isObject && Object.keys(o).length < (kv as number)) out.push(`${at}: fewer than ${kv} keys`)
          break
        case "maxProperties":
          if (isObject && Object.keys(o).length > (kv as number)) out.push(`${at}: more than ${kv} keys`)
          break
        case "prefixItems":
          if (Array.isArray(v)) (kv as Array<unknown>).forEach((ps, i) => i < v.length && out.push(...check(ps, v[i], `${at}[${i}]`)))
          break
        case "items":
          if (Array.isArray(v)) {
            const from = Array.isArray(s["prefixItems"]) ? (s["prefixItems"] as Array<unknown>).length : 0
            v.forEach((e, i) => i >= from && out.push(...check(kv, e, `${at}[${i}]`)))
          }
          break
        case "minItems":
          if (Array.isArray(v) && v.length < (kv as number)) out.push(`${at}: fewer than ${kv} items`)
          break
        case "maxItems":
          if (Array.isArray(v) && v.length > (kv as number)) out.push(`${at}: more than ${kv} items`)
          break
        case "uniqueItems":
          if (kv === true && Array.isArray(v) && new Set(v.map((e) => JSON.stringify(e))).size !== v.length) {
            out.push(`${at}: items are not unique`)
          }
          break
        case "minLength":
          if (typeof v === "string" && [...v].length < (kv as number)) out.push(`${at}: shorter than ${kv}`)
          break
        case "maxLength":
          if (typeof v === "string" && [...v].length > (kv as number)) out.push(`${at}: longer than ${kv}`)
          break
        case "pattern":
          if (typeof v === "string" && !new RegExp(kv as string, "u").test(v)) out.push(`${at}: does not match ${kv}`)
          break
        case "minimum":
          if (typeof v === "number" && v < (kv as number)) out.push(`${at}: below ${kv}`)
          break
        case "maximum":
          if (typeof v === "number" && v > (kv as number)) out.push(`${at}: above ${kv}`)
          break
        case "exclusiveMinimum":
          if (typeof v === "number" && v <= (kv as number)) out.push(`${at}: not above ${kv}`)
          break
        case "exclusiveMaximum":
          if (typeof v === "number" && v >= (kv as number)) out.push(`${at}: not below ${kv}`)
          break
        case "multipleOf":
          if (typeof v === "number" && !Number.isInteger(v / (kv as number))) out.push(`${at}: not a multiple of ${kv}`)
          break
        case "allOf":
          for (const sub of kv as Array<unknown>) out.push(...check(sub, v, at))
          break
        case "anyOf": {
          const tries = (kv as Array<unknown>).map((sub) => check(sub, v, at))
          if (!tries.some((t) => t.length === 0)) out.push(`${at}: matches none of anyOf (${tries.map((t) => t[0]).join(" / ")})`)
          break
        }
        case "oneOf": {
          const matching = (kv as Array<unknown>).filter((sub) => check(sub, v, at).length === 0).length
          if (matching !== 1) out.push(`${at}: matches ${matching} of oneOf, not exactly one`)
          break
        }
        case "not":
          if (check(kv, v, at).length === 0) out.push(`${at}: matches a 'not' schema`)
          break
        case "$ref":
          out.push(...check(resolve(kv as string), v, at))
          break
        default:
          if (!ANNOTATIONS.has(k)) throw new Error(`the test validator does not implement the keyword ${k} (at ${at})`)
      }
    }
    return out
  }
  return check(root, value, "$")
}

// -------------------------------------------------------------------------------------
// helpers
// -------------------------------------------------------------------------------------

const NAMES = Object.keys(documents) as Array<SchemaName>

/** The JSON block of the README's "### Plan files" section. */
const readmePlan = (): unknown => {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8")
  const section = readme.slice(readme.indexOf("### Plan files"))
  const block = /```json\n([\s\S]*?)\n```/.exec(section)
  expect(block, "README.md has a ```json block under ### Plan files").not.toBeNull()
  return JSON.parse(block![1]!)
}

const jsonLine = (stdout: string): any => {
  const lines = stdout.trimEnd().split("\n")
  expect(lines).toHaveLength(1)
  return JSON.parse(lines[0]!)
}

/** Runs the `schema` command in-process with `args`; returns its stdout and exit (help text is discarded). */
const runSchemaCommand = async (args: ReadonlyArray<string>) => {
  const chunks: Array<string> = []
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"))
    return true
  })
  const quiet = [vi.spyOn(console, "log").mockImplementation(() => {}), vi.spyOn(console, "error").mockImplementation(() => {})]
  try {
    const exit = await Effect.runPromiseExit(
      Command.runWith(schemaCommand, { version: "test", renderErrors: false })(args).pipe(Effect.provide(NodeServices.layer))
    )
    return { exit, stdout: chunks.join("") }
  } finally {
    spy.mockRestore()
    for (const q of quiet) q.mockRestore()
  }
}

// -------------------------------------------------------------------------------------
// tests
// -------------------------------------------------------------------------------------

describe("forkjoin schema", () => {
  it("prints a draft 2020-12 document with $schema, $id and a title for each name", async () => {
    expect(NAMES).toEqual(["plan", "changeset", "record", "codex-turn-diff", "claude-tool-event", "merge-file", "agents", "agent"])
    const ids = new Set<string>()
    for (const name of NAMES) {
      const doc = documentOf(name)
      expect(doc["$schema"]).toBe("https://json-schema.org/draft/2020-12/schema")
      expect(doc["$id"]).toBe(`urn:forkjoin:schema:${name}:1`)
      expect(doc["title"]).toBe(documents[name].title)
      expect(doc["description"]).toBe(documents[name].description)
      if (name === "codex-turn-diff") expect(doc["type"]).toBe("string")
      else if (name === "claude-tool-event") expect(doc["anyOf"]).toHaveLength(6)
      else if (name === "merge-file") expect(doc["anyOf"]).toHaveLength(2)
      else if (name === "agents" || name === "agent") expect(doc["required"]).toContain("ok")
      else {
        expect(doc["type"]).toBe("object")
        expect((doc["required"] as Array<string>)).toContain("schemaVersion")
      }
      ids.add(doc["$id"] as string)
      const { exit, stdout } = await runSchemaCommand([name])
      expect(Exit.isSuccess(exit), String(exit)).toBe(true)
      expect(stdout).toBe(render(name))
      expect(JSON.parse(stdout)).toEqual(doc)
    }
    expect(ids.size).toBe(NAMES.length)
    const unknown = await runSchemaCommand(["plans"])
    expect(Exit.isFailure(unknown.exit)).toBe(true)
    const failure = Exit.isFailure(unknown.exit) ? Cause.squash(unknown.exit.cause) : undefined
    expect(failure).toBeInstanceOf(CliError.ShowHelp)
    expect((failure as CliError.ShowHelp).errors.map((e) => e._tag)).toEqual(["InvalidValue"])
    expect(unknown.stdout).not.toContain("$schema")
  })

  it("the README's example plan is valid against the plan schema and decodes as a plan", () => {
    const plan = readmePlan()
    const doc = documentOf("plan")
    expect(validate(doc, plan)).toEqual([])
    expect(Result.isSuccess(decodePlan(plan))).toBe(true)
    // Every key of a task carries a description for editors.
    const task = ((doc["properties"] as any).tasks.items) as { properties: Record<string, Doc> }
    for (const [key, property] of Object.entries(task.properties)) {
      expect(JSON.stringify(property), key).toContain("\"description\"")
    }
  })

  it("the plan schema refuses what the plan decoder refuses: unknown keys, unknown actions, wrong kinds", () => {
    const doc = documentOf("plan")
    const good = readmePlan() as any
    const bad: Record<string, unknown> = {
      "a misspelt top-level key": { ...good, task: good.tasks },
      "no tasks": { schemaVersion: 1 },
      "schemaVersion 2": { ...good, schemaVersion: 2 },
      "an unknown mode": { schemaVersion: 1, tasks: [{ ...good.tasks[0], mode: "write" }] },
      "an unknown action": { schemaVersion: 1, tasks: [{ ...good.tasks[0], actions: [{ write_file: { path: "a" } }] }] },
      "an action with two names": {
        schemaVersion: 1,
        tasks: [{ ...good.tasks[0], actions: [{ read_file: { path: "a" }, finish: {} }] }]
      },
      "a misspelt task key": { schemaVersion: 1, tasks: [{ ...good.tasks[0], timeout: 5 }] },
      "maxAttempts 4": { schemaVersion: 1, tasks: [{ ...good.tasks[0], maxAttempts: 4 }] },
      "a writeScope that is not a list": { schemaVersion: 1, tasks: [{ ...good.tasks[0], writeScope: "docs" }] }
    }
    for (const [why, plan] of Object.entries(bad)) {
      expect(validate(doc, plan), why).not.toEqual([])
      expect(Result.isFailure(decodePlan(plan)), why).toBe(true)
    }
  })

  it("forkjoin run --help's example plan is valid against the plan schema and runs", () => {
    const help = runCli(["run", "--help"])
    expect(help.status).toBe(0)
    const line = help.stdout.split("\n").find((l) => l.includes("Example plan"))
    expect(line, help.stdout).toBeDefined()
    const plan = JSON.parse(line!.slice(line!.indexOf("{")).trim())
    expect(validate(documentOf("plan"), plan)).toEqual([])
    expect(Result.isSuccess(decodePlan(plan))).toBe(true)
    expect(help.stdout).toContain("forkjoin schema plan")
    const { dir, ws } = makeSandbox()
    fs.writeFileSync(path.join(dir, "plan.json"), JSON.stringify(plan))
    const ran = runCli(["run", path.join(dir, "plan.json"), "--workspace", ws, "--json"])
    expect(ran.status, ran.stderr).toBe(0)
  })

  it("a changeset run --export-only exported and records apply and ingest printed are valid; a broken one is not", () => {
    const { dir, ws } = makeSandbox()
    writeTree(ws, { "src/a.txt": "one\ntwo\n" })
    const planFile = path.join(dir, "plan.json")
    fs.writeFileSync(planFile, JSON.stringify({
      schemaVersion: 1,
      tasks: [{
        id: "edit",
        mode: "transactional_write",
        writeScope: ["src"],
        actions: [
          { apply_patch: { patch: patch("*** Update File: src/a.txt", "@@", " one", "-two", "+2", "*** Add File: src/b.txt", "+b") } },
          { finish: {} }
        ]
      }]
    }))
    const exported = runCli(["run", planFile, "--workspace", ws, "--export-only", "--json"])
    expect(exported.status, exported.stderr).toBe(0)
    const changeset = jsonLine(exported.stdout).results[0].changeset
    expect(changeset.entries.map((e: any) => e.path).sort()).toEqual(["src/a.txt", "src/b.txt"])
    const changesetDoc = documentOf("changeset")
    expect(validate(changesetDoc, changeset)).toEqual([])
    expect(Result.isSuccess(decodeUntrustedChangeset(changeset))).toBe(true)
    expect(validate(changesetDoc, { ...changeset, exportable: "yes" })).not.toEqual([])
    expect(validate(changesetDoc, { ...changeset, extra: 1 })).not.toEqual([])

    const applied = runCli(["apply", "-", "--workspace", ws, "--json"], { stdin: patch("*** Delete File: src/a.txt") })
    expect(applied.status, applied.stderr).toBe(0)
    const record = jsonLine(applied.stdout).record
    const eventFile = path.join(dir, "event.json")
    fs.writeFileSync(eventFile, JSON.stringify({ tool_name: "Write", tool_input: { file_path: "src/c.txt", content: "c\n" } }))
    const ingested = runCli(["history", "ingest", "--format", "claude-tool-event", eventFile, "--workspace", ws, "--json"])
    expect(ingested.status, ingested.stderr).toBe(0)
    const aggregate = jsonLine(ingested.stdout).record
    const recordDoc = documentOf("record")
    for (const r of [record, aggregate]) {
      expect(validate(recordDoc, r)).toEqual([])
      expect(Result.isSuccess(Schema.decodeUnknownResult(PatchHistoryRecord)(r))).toBe(true)
    }
    expect(validate(recordDoc, { ...record, exactness: "certain" })).not.toEqual([])
    const { commitOrdinal: _dropped, ...noOrdinal } = record
    expect(validate(recordDoc, noOrdinal)).not.toEqual([])
  })

  it("the turn diffs and Claude events history ingest accepts are valid; broken ones are not, nor ingested", () => {
    const { dir, ws } = makeSandbox()
    writeTree(ws, { "a.txt": "keep\nold\n", "b.ts": "a c x\n" })
    const codexDoc = documentOf("codex-turn-diff")
    const claudeDoc = documentOf("claude-tool-event")
    const ingest = (format: string, text: string) => {
      const file = path.join(dir, format === "codex-turn-diff" ? "turn.diff" : "event.json")
      fs.writeFileSync(file, text)
      return runCli(["history", "ingest", "--format", format, file, "--workspace", ws, "--json"])
    }
    // history.test.ts's turn diff and ProviderAggregates.test.ts's (a rename too).
    const diffs = [
      "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n",
      "diff --git a/docs/new.md b/docs/new.md\nnew file mode 100644\n--- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1,2 @@\n" +
      "+# New\n+text\ndiff --git a/x/from.txt b/y/to.txt\nsimilarity index 100%\nrename from x/from.txt\nrename to y/to.txt\n"
    ]
    for (const diff of diffs) {
      expect(validate(codexDoc, diff)).toEqual([])
      const r = ingest("codex-turn-diff", diff)
      expect(r.status, r.stderr).toBe(0)
    }
    // history.test.ts's and friction.test.ts's Writes, ProviderAggregates.test.ts's Edit hook event and MultiEdit block.
    const events: ReadonlyArray<unknown> = [
      { tool_name: "Write", tool_input: { file_path: path.join(ws, "w.txt"), content: "w\n" }, tool_response: { type: "create" } },
      { tool_name: "Write", tool_input: { file_path: "c.txt", content: "c\n" } },
      {
        session_id: "s",
        tool_name: "Edit",
        tool_input: { file_path: path.join(ws, "a.txt"), old_string: "old", new_string: "new" },
        tool_response: { filePath: path.join(ws, "a.txt"), originalFile: "keep\nold\n" }
      },
      {
        type: "tool_use",
        name: "MultiEdit",
        id: "toolu_1",
        input: { file_path: "b.ts", edits: [{ old_string: "a", new_string: "b" }, { old_string: "c", new_string: "d", replace_all: true }] }
      }
    ]
    for (const event of events) {
      expect(validate(claudeDoc, event), JSON.stringify(event)).toEqual([])
      const r = ingest("claude-tool-event", JSON.stringify(event))
      expect(r.status, r.stderr).toBe(0)
    }
    const brokenDiffs = ["", "hello\nworld\n", "+++ b/a.txt\n--- a/a.txt\n"]
    for (const diff of brokenDiffs) {
      expect(validate(codexDoc, diff), JSON.stringify(diff)).not.toEqual([])
      expect(jsonLine(ingest("codex-turn-diff", diff).stdout).error.code).toBe("malformed_event")
    }
    const brokenEvents: ReadonlyArray<unknown> = [
      { tool_name: "Bash", tool_input: { command: "ls" } },
      { tool_name: "Edit", tool_input: { file_path: "a.txt" } },
      { tool_name: "Write", tool_input: { file_path: "a.txt", content: 1 } },
      { tool_name: "MultiEdit", tool_input: { file_path: "a.txt", edits: [] } },
      { type: "tool_use", name: "MultiEdit", input: { file_path: "b.ts", edits: [{ old_string: "a" }] } },
      { type: "tool_use", name: "Read", input: { file_path: "a.txt" } },
      ["not", "an", "object"]
    ]
    for (const event of brokenEvents) {
      expect(validate(claudeDoc, event), JSON.stringify(event)).not.toEqual([])
      const r = ingest("claude-tool-event", JSON.stringify(event))
      expect(r.status, JSON.stringify(event)).toBe(1)
      expect(jsonLine(r.stdout).error.code).toBe("malformed_event")
    }
    // The parser names the JSON path of the first problem.
    const bad = ingest("claude-tool-event", JSON.stringify(brokenEvents[4]))
    expect(jsonLine(bad.stdout).error.message).toContain("$.input.edits[0].new_string")
  })

  it("the lines merge-file --json printed (clean, conflicted, failed) are valid; broken ones are not", () => {
    const { dir } = makeSandbox()
    const file = (name: string, text: string) => {
      const p = path.join(dir, name)
      fs.writeFileSync(p, text)
      return p
    }
    const base = file("base.txt", "a\nb\nc\n")
    const lines = [
      runCli(["merge-file", "--json", file("ours1.txt", "A\nb\nc\n"), base, file("theirs1.txt", "a\nb\nC\n")]),
      runCli(["merge-file", "--json", file("ours2.txt", "a\nX\nc\n"), base, file("theirs2.txt", "a\nY\nc\n")]),
      runCli(["merge-file", "--json", path.join(dir, "missing.txt"), base, base])
    ].map((r) => jsonLine(r.stdout))
    expect(lines.map((l) => [l.ok, l.clean ?? l.error.code])).toEqual([[true, true], [true, false], [false, "input_missing"]])
    const doc = documentOf("merge-file")
    for (const line of lines) {
      expect(validate(doc, line), JSON.stringify(line)).toEqual([])
      expect(Result.isSuccess(Schema.decodeUnknownResult(Schema.Union([MergeFileReport, MergeFileFailure]))(line))).toBe(true)
    }
    const [clean, , failed] = lines
    for (const broken of [{ ...clean, method: "magic" }, { ...clean, conflicts: -1 }, { ...clean, ok: false }, { ...failed, error: { ...failed.error, code: "oops" } }]) {
      expect(validate(doc, broken), JSON.stringify(broken)).not.toEqual([])
    }
  })

  it("the lines agents --json and agents ID --json printed after a session are valid; broken ones are not", async () => {
    const { ws } = makeSandbox()
    // A parent that forks one writing child, then finishes; the child adds one file.
    const script = (c: Conversation): Turn => {
      if (c.system.startsWith("You are the parent")) {
        if (c.turn > 0) return { calls: [{ name: "finish", args: {} }] }
        return { calls: [{ name: "run_subagents", args: { tasks: [{ id: "docs", mode: "transactional_write", writeScope: ["docs"], prompt: "write docs" }] } }] }
      }
      if (c.turn > 0) return { calls: [{ name: "finish", args: {} }] }
      return { calls: [{ name: "apply_patch", args: { patch: "*** Begin Patch\n*** Add File: docs/a.md\n+a\n*** End Patch" } }] }
    }
    const server = await startModelServer("openai", script)
    let agentId: string
    try {
      const r = await runCliAsync(["agent", "write the docs", "--workspace", ws, "--model", "test-model", "--json"], { OPENAI_BASE_URL: server.url })
      expect(r.status, r.stderr).toBe(0)
      agentId = jsonLine(r.stdout).agentId
    } finally {
      await server.close()
    }
    const list = jsonLine(runCli(["agents", "--workspace", ws, "--json"]).stdout)
    const show = jsonLine(runCli(["agents", agentId, "--workspace", ws, "--json"]).stdout)
    expect(list.agents.map((a: any) => a.agentId)).toEqual([agentId])
    expect(show.runs).toHaveLength(1)
    const listDoc = documentOf("agents")
    const showDoc = documentOf("agent")
    expect(validate(listDoc, list)).toEqual([])
    expect(validate(showDoc, show)).toEqual([])
    expect(Result.isSuccess(Schema.decodeUnknownResult(AgentsList)(list))).toBe(true)
    expect(Result.isSuccess(Schema.decodeUnknownResult(AgentShow)(show))).toBe(true)
    expect(validate(listDoc, { ...list, agents: [{ ...list.agents[0], status: "dreaming" }] })).not.toEqual([])
    expect(validate(listDoc, { ok: true })).not.toEqual([])
    expect(validate(showDoc, { ...show, runs: "none" })).not.toEqual([])
    expect(validate(showDoc, list)).not.toEqual([])
  })
})
