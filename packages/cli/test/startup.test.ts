/**
 * What a start-up evaluates: the CLI bundle is split into chunks the launcher loads when a
 * command first needs them (`dist/forkjoin.chunks.json` names the sources of each). `--version`,
 * `--help` and `apply` must not evaluate the heavy modules other commands use (isomorphic-git,
 * the MCP server, the HTTP gateway, the model drivers, the merge and orchestrator, Node's
 * child_process); a tracer loaded before the launcher records every chunk it compiles and every
 * module it requires, so an eager import of one fails here.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { makeSandbox, ROOT, runCli } from "./helpers.ts"

const DIST = path.join(ROOT, "packages/cli/dist")

// Every script the launcher compiles goes through vm.Script, every require through Module._load:
// both go to FJ_TRACE.
const tracer = (dir: string) => {
  const file = path.join(dir, "trace-chunks.cjs")
  fs.writeFileSync(
    file,
    "const vm = require('node:vm'); const fs = require('node:fs'); const Module = require('node:module');\n" +
      "const Script = vm.Script; const load = Module._load;\n" +
      "vm.Script = class extends Script {\n" +
      "  constructor(source, options) { super(source, options); fs.appendFileSync(process.env.FJ_TRACE, 'chunk ' + options.filename + '\\n') }\n" +
      "};\n" +
      "Module._load = function (request, ...rest) {\n" +
      "  fs.appendFileSync(process.env.FJ_TRACE, 'require ' + request + '\\n');\n" +
      "  return load.call(this, request, ...rest);\n" +
      "};\n"
  )
  const log = path.join(dir, "chunks.log")
  const lines = (kind: string) => fs.readFileSync(log, "utf8").split("\n").filter((l) => l.startsWith(kind)).map((l) => l.slice(kind.length))
  return {
    env: { NODE_OPTIONS: `--require ${file}`, FJ_TRACE: log },
    // The sources the traced runs evaluated, read from the chunk manifest of the build they ran.
    evaluated: (): Array<string> => {
      const manifest: Record<string, ReadonlyArray<string>> = JSON.parse(fs.readFileSync(path.join(DIST, "forkjoin.chunks.json"), "utf8"))
      const chunks = lines("chunk ").map((f) => path.relative(DIST, f))
      expect(chunks).toContain("forkjoin.cjs")
      return chunks.flatMap((chunk) => {
        const sources = manifest[chunk]
        if (sources === undefined) throw new Error(`${chunk} is not in the chunk manifest: was the CLI rebuilt during this test?`)
        return sources
      })
    },
    // What the traced runs required from Node and node_modules.
    required: () => lines("require "),
    reset: () => fs.writeFileSync(log, "")
  }
}

// Sources no start-up of these commands may evaluate.
const heavy = [
  /node_modules\/isomorphic-git\//,
  /node_modules\/pako\//,
  /node_modules\/ws\//,
  /node_modules\/effect\/dist\/(ai|http-api|rpc|socket|workers)\//,
  /node_modules\/effect\/dist\/http\/HttpServer/,
  /^packages\/gateway\//,
  /^packages\/drivers\//,
  /^packages\/orchestrator\//,
  /^packages\/probes?\//,
  /^packages\/cluster\//,
  /^packages\/merge\/src\/(?!Syntax\.ts)/,
  /^packages\/cli\/src\/(Mcp|Serve|Agent|Agents|Run|Runner|Gate|Probe|History|MergeFile|MergeDriver|Demo)\.ts$/
]
const heavyIn = (sources: ReadonlyArray<string>) => sources.filter((s) => heavy.some((h) => h.test(s)))

describe("a start-up evaluates only what its command uses", () => {
  it("--version and --help evaluate neither the engine nor the history store, nor any heavy module", () => {
    const { dir } = makeSandbox()
    const trace = tracer(dir)
    for (const args of [["--version"], ["--help"]]) {
      trace.reset()
      const r = runCli(args, { env: trace.env })
      expect(r.status, r.stderr).toBe(0)
      const sources = trace.evaluated()
      expect(sources).toContain("packages/cli/src/main.ts")
      expect(heavyIn(sources)).toEqual([])
      // The engine's error and progress types are shared with the command wiring; its program is not.
      expect(sources.filter((s) => /^packages\/(history\/|engine\/src\/(Engine|internal\/))/.test(s))).toEqual([])
      expect(trace.required().filter((r) => /better-sqlite3|lz4-napi|child_process/.test(r))).toEqual([])
      // A bare --version builds no subcommand; help lists them all.
      const definitions = sources.filter((s) => /^packages\/cli\/src\/\w+Command\.ts$/.test(s))
      expect(definitions.length).toBe(args[0] === "--version" ? 0 : 22)
    }
  })

  it("apply evaluates the engine and the history store, and no heavy module", () => {
    const { dir, ws } = makeSandbox()
    const trace = tracer(dir)
    fs.writeFileSync(path.join(ws, "a.txt"), "one\n")
    trace.reset()
    const r = runCli(["apply", "--workspace", ws], { env: trace.env, stdin: "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch\n" })
    expect(r.status, r.stderr).toBe(0)
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("two\n")
    const sources = trace.evaluated()
    expect(sources).toContain("packages/engine/src/Engine.ts")
    expect(heavyIn(sources)).toEqual([])
    // Only apply's definition: the other subcommands are neither built nor loaded.
    expect(sources.filter((s) => /^packages\/cli\/src\/\w+Command\.ts$/.test(s))).toEqual(["packages/cli/src/ApplyCommand.ts"])
    // forkjoin spawns no process for an apply: Node's spawner stays unloaded.
    expect(trace.required().filter((r) => /child_process/.test(r))).toEqual([])
  })
})
