/**
 * `agent` bench: what model-driven sessions and the MCP server add on top of the engine.
 *
 * 1. `driver_step_overhead_ms`  a `direct` session of 20 `read_file` tool calls driven by the
 *                               model driver against a loopback OpenAI-compatible server (its own
 *                               process) that answers instantly (JSON), minus the same session
 *                               driven by a scripted driver: the driver's cost per tool call
 *                               (prompt building, HTTP round trip, decoding, redacting every
 *                               answer with a configured key). Also `cpuMsPerToolCall`
 *                               (this process's CPU only). Target: <= 2 ms per tool call.
 *                               `driver_step_overhead_ms_200_steps`: the same for 200 calls, where
 *                               the history every request resends has grown (same target).
 * 2. `mcp_apply_patch_ms`       one `apply_patch` tool call on the large patch (the `format`
 *                               workload: 100,000 lines, 2,000 chunks) from the official MCP SDK
 *                               client to a running `forkjoin mcp`, round trip, vs the whole Codex
 *                               `apply_patch` process on the same patch. Target: ratio <= 1.0.
 *                               The file is restored (untimed) between runs for both.
 *
 * Usage: `npm run bench -- agent [--json] [--only metric[,metric]]`.
 * Every figure checks the produced bytes first; a wrong answer makes the bench exit 1.
 */
import * as OpenAiCompatible from "@forkjoin/drivers/OpenAiCompatible"
import * as ModelDriver from "@forkjoin/drivers/ModelDriver"
import * as ProviderSettings from "@forkjoin/drivers/ProviderSettings"
import * as Tools from "@forkjoin/drivers/Tools"
import { Engine } from "@forkjoin/engine/Engine"
import { layerMemory } from "@forkjoin/history/HistoryStoreSqlite"
import { BlobStore } from "@forkjoin/runtime/BlobStore"
import { Driver, scripted } from "@forkjoin/runtime/Driver"
import * as Session from "@forkjoin/runtime/Session"
import { ThreadId } from "@forkjoin/schema"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { CODEX_PEER_NAME, ensureCodex } from "./codex.ts"
import { makeFormatWorkload } from "./fixture.ts"
import { cliPaths, emitJson, ensureCliBundle, errorFigure, type Figure, median, note, onlyMetrics, printTable, repoRoot, round, runFailure, spread, timeSpawn, wantsJson } from "./harness.ts"

const BENCH = "agent"
const SEED = 0x5eed_f0a7
const LINES = 100_000
const CHUNKS = 2_000
/** Tool calls per session: a short session, and a long one whose history (resent every turn) grows. */
const SESSION_STEPS = [20, 200] as const
const STEP_RUNS = 5
const MCP_WARMUP = 1
const MCP_RUNS = 21
const STEP_TARGET_MS = 2
const MCP_TARGET_RATIO = 1.0

const errorText = (e: unknown): string => (e instanceof Error ? (e.stack ?? e.message) : String(e))

/** One `direct` session over `ws` with `driver`; returns its wall time in ms. */
const timeSession = (ws: string, driver: Driver["Service"], STEPS: number): Promise<{ ms: number; cpuMs: number; result: Session.SessionResult }> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const t0 = process.hrtime.bigint()
      const c0 = process.cpuUsage()
      const result = yield* Session.run({ mode: "direct", threadId: ThreadId.make("bench"), maxSteps: STEPS + 10 })
      const c = process.cpuUsage(c0)
      return { ms: Number(process.hrtime.bigint() - t0) / 1e6, cpuMs: (c.user + c.system) / 1000, result }
    }).pipe(
      Effect.provideService(Driver, driver),
      Effect.provide(Layer.mergeAll(BlobStore.layerMemory, Engine.layer({ root: ws }).pipe(Layer.provide(layerMemory))))
    )
  )

/**
 * A model server answering instantly, in its own process (its CPU is not the driver's): it
 * drains each request unread and replies with a canned Chat Completions answer, `read_file`
 * for STEPS requests then `finish`, session after session.
 */
const instantServer = (STEPS: number): Promise<{ readonly url: string; readonly close: () => void }> =>
  new Promise((resolve, reject) => {
    const reply = (name: string, args: unknown, n: number) =>
      JSON.stringify({
        id: `c${n}`,
        object: "chat.completion",
        choices: [{ index: 0, message: { role: "assistant", content: null, tool_calls: [{ id: `call_${n}`, type: "function", function: { name, arguments: JSON.stringify(args) } }] }, finish_reason: "tool_calls" }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }
      })
    const source = `
      const http = require("node:http")
      const steps = ${STEPS}
      const read = ${JSON.stringify(reply("read_file", { path: "a.txt" }, 0))}
      const finish = ${JSON.stringify(reply("finish", {}, 1))}
      let n = 0
      const server = http.createServer((req, res) => {
        req.resume()
        req.on("end", () => {
          const body = n++ % (steps + 1) === steps ? finish : read
          res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body)
        })
      })
      server.listen(0, "127.0.0.1", () => process.stdout.write(String(server.address().port) + "\\n"))
    `
    const child = spawn(process.execPath, ["-e", source], { stdio: ["ignore", "pipe", "inherit"] })
    child.once("error", reject)
    child.stdout.once("data", (d: Buffer) => resolve({ url: `http://127.0.0.1:${d.toString().trim()}/v1`, close: () => child.kill() }))
  })

const stepOverhead = async (STEPS: number): Promise<Figure> => {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), "fj-bench-agent-"))
  fs.mkdirSync(path.join(ws, ".forkjoin"))
  fs.writeFileSync(path.join(ws, "a.txt"), "hello\n")
  const server = await instantServer(STEPS)
  try {
    // A configured key, as with a hosted provider: every answer is redacted with it.
    const provider = ProviderSettings.resolve(
      { kind: "openai", model: "bench", baseUrl: server.url, apiKeyEnv: "FJ_BENCH_KEY" },
      { FJ_BENCH_KEY: "sk-bench-0123456789abcdefghijklmnop" },
      "bench"
    )
    if (Result.isFailure(provider)) throw new Error(provider.failure.message)
    const model = await Effect.runPromise(OpenAiCompatible.make(provider.success))
    const script = [...Array.from({ length: STEPS }, () => ({ read_file: { path: "a.txt" } })), { finish: {} }]
    const modelMs: Array<number> = []
    const scriptedMs: Array<number> = []
    const modelCpu: Array<number> = []
    const scriptedCpu: Array<number> = []
    for (let run = 0; run < STEP_RUNS + 1; run++) {
      const m = await timeSession(ws, ModelDriver.make({ model, system: "bench", task: "bench", tools: Tools.childTools, maxSteps: STEPS + 10 }).driver, STEPS)
      const s = await timeSession(ws, scripted(script), STEPS)
      if (m.result.status !== "finished" || m.result.steps.length !== STEPS + 1) throw new Error(`model session ended ${m.result.status} after ${m.result.steps.length} steps`)
      if (!m.result.steps.every((x) => x.observation.ok)) throw new Error("a model-driven read_file was refused")
      // The first pair warms up (JIT, sockets).
      if (run > 0) {
        modelMs.push(m.ms)
        scriptedMs.push(s.ms)
        modelCpu.push(m.cpuMs)
        scriptedCpu.push(s.cpuMs)
      }
    }
    const perStep = modelMs.map((m, i) => (m - scriptedMs[i]!) / (STEPS + 1))
    const ours = round(median(perStep))
    // CPU of this process only (the server runs in its own): what the driver itself costs,
    // without the scheduling waits a loaded machine adds to a round trip.
    const cpuPerStep = round(median(modelCpu.map((m, i) => (m - scriptedCpu[i]!) / (STEPS + 1))))
    return {
      bench: BENCH,
      metric: STEPS === SESSION_STEPS[0] ? "driver_step_overhead_ms" : `driver_step_overhead_ms_${STEPS}_steps`,
      ours,
      peer: null,
      ratio: null,
      peerName: null,
      unit: "ms per tool call",
      n: perStep.length,
      target: STEP_TARGET_MS,
      targetKind: "ours_max",
      pass: ours <= STEP_TARGET_MS,
      cpuMsPerToolCall: cpuPerStep,
      modelSessionMs: round(median(modelMs)),
      scriptedSessionMs: round(median(scriptedMs)),
      steps: STEPS + 1,
      ...spread(perStep)
    }
  } finally {
    server.close()
    fs.rmSync(ws, { recursive: true, force: true })
  }
}

const mcpApplyPatch = async (root: string): Promise<Figure> => {
  const built = ensureCliBundle(root)
  if (built.error !== undefined) return errorFigure(BENCH, "mcp_apply_patch_ms", built.error)
  note(`generating ${LINES} lines / ${CHUNKS} chunks (seed ${SEED.toString(16)}, the format workload)`)
  const w = makeFormatWorkload(SEED, LINES, CHUNKS)
  const sandbox = fs.mkdtempSync(path.join(os.tmpdir(), "fj-bench-mcp-"))
  const ours = path.join(sandbox, "ours")
  const theirs = path.join(sandbox, "codex")
  const restore = (ws: string) => {
    fs.mkdirSync(path.join(ws, path.dirname(w.path)), { recursive: true })
    fs.writeFileSync(path.join(ws, w.path), w.original)
  }
  const check = (ws: string, who: string) => {
    const got = fs.readFileSync(path.join(ws, w.path), "utf8")
    if (got !== w.expected) throw new Error(`${who} produced the wrong bytes`)
  }
  fs.mkdirSync(path.join(ours, ".forkjoin"), { recursive: true })
  fs.mkdirSync(theirs, { recursive: true })
  const transport = new StdioClientTransport({ command: process.execPath, args: [cliPaths(root).bin, "mcp", "--workspace", ours], stderr: "pipe" })
  const client = new Client({ name: "forkjoin-bench", version: "1.0.0" })
  try {
    await client.connect(transport)
    const peer = ensureCodex(root, note)
    const oursMs: Array<number> = []
    const peerMs: Array<number> = []
    // Interleaved (ours, then Codex, per run) so a loaded machine weighs on both alike.
    for (let run = 0; run < MCP_WARMUP + MCP_RUNS; run++) {
      restore(ours)
      const t0 = process.hrtime.bigint()
      const r = await client.callTool({ name: "apply_patch", arguments: { patch: w.patch } })
      const ms = Number(process.hrtime.bigint() - t0) / 1e6
      if (r.isError === true) throw new Error(`apply_patch over MCP was refused: ${JSON.stringify(r.content).slice(0, 500)}`)
      check(ours, "forkjoin mcp")
      if (run >= MCP_WARMUP) oursMs.push(ms)
      if (peer._tag === "Unavailable") continue
      restore(theirs)
      const t = timeSpawn(peer.applyPatch, [], { cwd: theirs, input: w.patch })
      const bad = runFailure("codex apply_patch", t.result)
      if (bad !== undefined) throw new Error(bad)
      check(theirs, "codex apply_patch")
      if (run >= MCP_WARMUP) peerMs.push(t.ms)
    }
    if (peer._tag === "Unavailable") {
      return { bench: BENCH, metric: "mcp_apply_patch_ms", ours: round(median(oursMs)), peer: null, ratio: null, peerName: CODEX_PEER_NAME, unit: "ms", n: oursMs.length, peerError: peer.error }
    }
    const o = round(median(oursMs))
    const p = round(median(peerMs))
    const ratio = round(o / p)
    return {
      bench: BENCH,
      metric: "mcp_apply_patch_ms",
      ours: o,
      peer: p,
      ratio,
      peerName: CODEX_PEER_NAME,
      unit: "ms",
      n: oursMs.length,
      target: MCP_TARGET_RATIO,
      targetKind: "ratio_max",
      pass: ratio <= MCP_TARGET_RATIO,
      ours_spread: spread(oursMs),
      peer_spread: spread(peerMs)
    }
  } finally {
    await client.close()
    fs.rmSync(sandbox, { recursive: true, force: true })
  }
}

const main = async (): Promise<void> => {
  const argv = process.argv.slice(2)
  const json = wantsJson(argv)
  const only = onlyMetrics(argv)
  const enabled = (metric: string): boolean => only === undefined || only.has(metric)
  const root = repoRoot()
  const figures: Array<Figure> = []
  const report = (f: Figure) => {
    const figure = { ...f, load1: round(os.loadavg()[0] ?? 0, 2) }
    figures.push(figure)
    if (json) emitJson(figure)
  }
  if (enabled("driver_step_overhead_ms")) {
    for (const steps of SESSION_STEPS) {
      note(`model driver: sessions of ${steps} tool calls against a loopback model server, ${STEP_RUNS} runs`)
      report(await stepOverhead(steps).catch((e) => errorFigure(BENCH, "driver_step_overhead_ms", errorText(e))))
    }
  }
  if (enabled("mcp_apply_patch_ms")) {
    note(`forkjoin mcp apply_patch round trip, ${MCP_RUNS} runs`)
    report(await mcpApplyPatch(root).catch((e) => errorFigure(BENCH, "mcp_apply_patch_ms", errorText(e))))
  }
  if (!json) printTable(figures)
  if (figures.some((f) => f.error !== undefined)) process.exitCode = 1
}

await main()
