/**
 * `forkjoin agent` end to end: the built CLI against a loopback model server speaking each
 * provider's wire format, configured the way users do (the `OPENAI_*` / `ANTHROPIC_*`
 * variables with `--model`, or `forkjoin.config.json` `models`). A parent forks children that
 * are joined (at `bold`, with the skipped gate as a warning on stderr); the autonomy gate
 * refuses mutating children below `safe`, which fails the command with the reason on stderr
 * even without a terminal; a runaway parent exits 1; bad settings exit 2 naming what to fix;
 * `config explain` shows the models with the key as set/unset only. A provider that echoes the
 * configured keys (in answers, tool calls, 401 and 500 bodies) leaks them into no output and no
 * file: not stdout (`--json` or text), stderr, transcripts, the workspace or the history database.
 */
import { Transcript } from "@forkjoin/schema/Transcript"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Conversation, startModelServer, type Turn } from "../../drivers/test/support/modelServer.ts"
import { buildCli, makeSandbox, removeSandboxes, runCliAsync, writeTree } from "./helpers.ts"

/** The warning `forkjoin run` prints too when the gate is skipped at `bold`. */
const BOLD_WARNING = /^warning: Autonomy level bold \(env FORKJOIN_AUTONOMY\): mutating children run without checking probe evidence; the gate was skipped\.\n$/

beforeAll(() => buildCli())
afterAll(removeSandboxes)

const isParent = (system: string) => system.startsWith("You are the parent")

const forkTwo = (c: Conversation): Turn => {
  if (isParent(c.system)) {
    if (c.turn === 0) {
      return {
        calls: [{
          name: "run_subagents",
          args: { tasks: ["docs", "src"].map((id) => ({ id, mode: "transactional_write", writeScope: [id], prompt: `write ${id}` })) }
        }]
      }
    }
    return { calls: [{ name: "finish", args: {} }] }
  }
  const id = c.task.slice("write ".length)
  if (c.turn === 0) return { calls: [{ name: "apply_patch", args: { patch: `*** Begin Patch\n*** Add File: ${id}/note.md\n+by ${id}\n*** End Patch` } }] }
  return { calls: [{ name: "finish", args: {} }] }
}

describe("forkjoin agent", () => {
  it("OpenAI-compatible via OPENAI_BASE_URL and --model: forks two children, joins them, exits 0 with the JSON line", async () => {
    const { ws } = makeSandbox()
    const server = await startModelServer("openai", forkTwo)
    try {
      const r = await runCliAsync(["agent", "write the docs and the code", "--workspace", ws, "--model", "test-model", "--json"], { OPENAI_BASE_URL: server.url })
      expect(r.stderr).toMatch(BOLD_WARNING)
      expect(r.status).toBe(0)
      const out = JSON.parse(r.stdout)
      expect(out.ok).toBe(true)
      expect(out.runId).toMatch(/^run-/)
      expect(out.finish).toEqual({ ok: true })
      expect(out.mergeExecution.status).toBe("applied")
      expect(out.mergeExecution.outcomes.map((o: any) => [o.childId, o.status])).toEqual([["docs", "applied"], ["src", "applied"]])
      expect(out.transcripts).toHaveLength(3)
      for (const t of out.transcripts) expect(fs.existsSync(t)).toBe(true)
      expect(fs.readFileSync(path.join(ws, "docs/note.md"), "utf8")).toBe("by docs\n")
      expect(fs.readFileSync(path.join(ws, "src/note.md"), "utf8")).toBe("by src\n")
      expect(server.requests[0]!.body.model).toBe("test-model")
      // A loopback server may be keyless: no Authorization header was sent.
      expect(server.requests[0]!.headers.authorization).toBeUndefined()
    } finally {
      await server.close()
    }
  })

  it("Anthropic via forkjoin.config.json (streaming) and --provider: the human output ends with the join's table", async () => {
    const { ws } = makeSandbox()
    const server = await startModelServer("anthropic", forkTwo)
    try {
      writeTree(ws, {
        "forkjoin.config.json": JSON.stringify({
          models: { provider: "openai", providers: { anthropic: { baseUrl: server.url, model: "claude-test", stream: true } } }
        })
      })
      const r = await runCliAsync(["agent", "write", "--workspace", ws, "--provider", "anthropic"], { ANTHROPIC_API_KEY: "sk-ant-secret" })
      expect(r.status).toBe(0)
      expect(r.stdout).toMatch(/docs\s+applied/)
      expect(r.stdout).toMatch(/src\s+applied/)
      expect(r.stdout).toMatch(/parent finished\n$/)
      expect(server.requests.every((q) => q.body.stream === true && q.body.model === "claude-test")).toBe(true)
      expect(server.requests[0]!.headers["x-api-key"]).toBe("sk-ant-secret")
      expect(r.stdout + r.stderr).not.toContain("sk-ant-secret")
    } finally {
      await server.close()
    }
  })

  it("at the default level (supervised), a mutating child is refused before any child starts: the parent reads the refusal, the command exits 1 with the reason on stderr", async () => {
    const { ws } = makeSandbox()
    const refusals: Array<unknown> = []
    const script = (c: Conversation): Turn => {
      if (!isParent(c.system)) return { text: "no child should run" }
      if (c.turn === 0) return forkTwo(c)
      refusals.push(c.results[0]?.content)
      return { calls: [{ name: "finish", args: {} }] }
    }
    const server = await startModelServer("openai", script)
    try {
      // No FORKJOIN_AUTONOMY: the built-in default level. Pipes, not a terminal.
      const env = { OPENAI_BASE_URL: server.url, FORKJOIN_AUTONOMY: "" }
      const json = await runCliAsync(["agent", "try", "--workspace", ws, "--model", "m", "--json"], env)
      expect(refusals[0]).toMatchObject({ ok: false, code: "mutating_subagents_not_granted" })
      expect(server.requests).toHaveLength(2)
      expect(fs.existsSync(path.join(ws, "docs"))).toBe(false)
      expect(json.status).toBe(1)
      expect(json.stderr).toMatch(/^error\[mutating_subagents_not_granted\]: run_subagents was refused: Mutating children \(docs, src\) were not started: .+\n$/)
      const out = JSON.parse(json.stdout)
      expect(out).toMatchObject({ ok: false, runId: null, finish: { ok: true } })
      expect(out.gateRefusals).toEqual([{ code: "mutating_subagents_not_granted", message: expect.stringContaining("Mutating children (docs, src) were not started") }])
      const text = await runCliAsync(["agent", "try", "--workspace", ws, "--model", "m"], env)
      expect(text.status).toBe(1)
      expect(text.stderr).toBe(json.stderr)
      expect(text.stdout).toMatch(/parent finished, but its mutating children were refused \(1 run_subagents call\(s\); the reason is on stderr\)\n$/)
      expect(fs.existsSync(path.join(ws, "docs"))).toBe(false)
    } finally {
      await server.close()
    }
  })

  it("a parent that never finishes exits 1 at its step limit", async () => {
    const { ws } = makeSandbox()
    const server = await startModelServer("openai", () => ({ calls: [{ name: "list_dir", args: { path: "." } }] }))
    try {
      const r = await runCliAsync(["agent", "loop", "--workspace", ws, "--model", "m", "--max-steps", "3", "--json"], { OPENAI_BASE_URL: server.url })
      expect(r.status).toBe(1)
      expect(JSON.parse(r.stdout).finish).toMatchObject({ ok: false, code: "step_limit" })
    } finally {
      await server.close()
    }
  })

  it("an unknown model (the server's 404) exits 1 naming --model", async () => {
    const { ws } = makeSandbox()
    const server = await startModelServer("openai", () => ({ status: 404, body: "{\"error\":{\"message\":\"model not found\"}}" }))
    try {
      const r = await runCliAsync(["agent", "x", "--workspace", ws, "--model", "nope", "--json"], { OPENAI_BASE_URL: server.url })
      expect(r.status).toBe(1)
      expect(JSON.parse(r.stdout).finish.message).toMatch(/unknown model 'nope' \(--model\)/)
    } finally {
      await server.close()
    }
  })

  it("bad settings exit 2 before any request, naming what to fix", async () => {
    const { ws } = makeSandbox()
    const noModel = await runCliAsync(["agent", "x", "--workspace", ws], { OPENAI_BASE_URL: "http://127.0.0.1:9/v1" })
    expect(noModel.status).toBe(2)
    expect(noModel.stderr).toMatch(/no model is configured for openai: pass --model NAME/)
    const noKey = await runCliAsync(["agent", "x", "--workspace", ws, "--model", "gpt"], {})
    expect(noKey.status).toBe(2)
    expect(noKey.stderr).toMatch(/set the environment variable OPENAI_API_KEY/)
    writeTree(ws, { "forkjoin.config.json": JSON.stringify({ models: { providers: { openai: { baseUrll: "x" } } } }) })
    const typo = await runCliAsync(["agent", "x", "--workspace", ws, "--model", "gpt"], {})
    expect(typo.status).toBe(2)
    expect(typo.stderr).toMatch(/unknown key "baseUrll" \(did you mean "baseUrl"\?\)/)
  })
})

describe("forkjoin agent with a provider that echoes the keys", () => {
  // Quotes, a backslash and a slash: the JSON-escaped form differs from the raw one.
  const KEY = "sk-proj-E2e\"Secret\\Key/0123456789"
  const OTHER = "sk-ant-api03-OtherKey-9876543210"
  const FORMS = [KEY, JSON.stringify(KEY).slice(1, -1), OTHER, JSON.stringify(KEY).slice(1, -1).replaceAll("/", "\\/")]
  const echo = `Incorrect API key provided: ${KEY} (other: ${OTHER}); Authorization: Bearer ${KEY}; x-api-key: ${OTHER}`

  /** Every file under `dir`, the history database and its journal files included. */
  const filesUnder = (dir: string): Array<string> =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      const p = path.join(dir, e.name)
      return e.isDirectory() ? filesUnder(p) : e.isFile() ? [p] : []
    })

  /** Where any form of a key shows up, as `where: form` lines. */
  const leaksIn = (where: string, bytes: Buffer | string): Array<string> =>
    FORMS.filter((form) => Buffer.from(bytes).includes(form)).map((form) => `${where}: ${form}`)

  /** The parent forks a child; both echo the keys in text and in patches; then the provider refuses with them in its body. */
  const echoing = (refusal: Turn) => (c: Conversation): Turn => {
    if (!isParent(c.system)) {
      return c.turn === 0
        ? { calls: [{ name: "apply_patch", args: { patch: `*** Begin Patch\n*** Add File: docs/key.md\n+${KEY}\n*** End Patch` } }], text: `child sees ${KEY}` }
        : { calls: [{ name: "finish", args: {} }] }
    }
    if (c.turn === 0) return { calls: [{ name: "run_subagents", args: { tasks: [{ id: "docs", mode: "transactional_write", writeScope: ["docs"], prompt: "write docs" }] } }] }
    if (c.turn === 1) return { calls: [{ name: "apply_patch", args: { patch: `*** Begin Patch\n*** Add File: out.txt\n+${KEY} ${OTHER}\n*** End Patch` } }], text: `parent sees ${echo}` }
    return refusal
  }

  const cases = [
    { name: "OpenAI-compatible, JSON answers, then a 401", kind: "openai" as const, stream: false, refusal: { status: 401, body: JSON.stringify({ error: { message: echo } }) } },
    { name: "Anthropic, streamed answers, then a 500 that is not JSON", kind: "anthropic" as const, stream: true, refusal: { status: 500, body: `upstream failed: ${echo}` } }
  ]
  for (const c of cases) {
    it(`${c.name}: no key in stdout (--json and text), stderr, transcripts, the workspace or the history database`, async () => {
      const { dir, ws } = makeSandbox()
      const server = await startModelServer(c.kind, echoing(c.refusal))
      try {
        writeTree(ws, {
          "forkjoin.config.json": JSON.stringify({
            models: { provider: c.kind, model: "m", providers: { [c.kind]: { baseUrl: server.url, stream: c.stream, maxRetries: 0 } } }
          })
        })
        const env = { OPENAI_API_KEY: KEY, ANTHROPIC_API_KEY: OTHER }
        if (c.kind === "anthropic") [env.OPENAI_API_KEY, env.ANTHROPIC_API_KEY] = [OTHER, KEY]
        const json = await runCliAsync(["agent", "echo", "--workspace", ws, "--json"], env)
        const text = await runCliAsync(["agent", "echo", "--workspace", ws], env)
        // The key was sent, and echoed back, as configured.
        expect(server.requests[0]!.headers[c.kind === "openai" ? "authorization" : "x-api-key"]).toBe(c.kind === "openai" ? `Bearer ${KEY}` : KEY)
        const files = filesUnder(dir)
        expect(files.some((f) => f.endsWith("history.db"))).toBe(true)
        expect(files.filter((f) => f.endsWith("transcript.json"))).toHaveLength(4)
        const leaks = [
          ...leaksIn("--json stdout", json.stdout),
          ...leaksIn("--json stderr", json.stderr),
          ...leaksIn("text stdout", text.stdout),
          ...leaksIn("text stderr", text.stderr),
          ...files.flatMap((f) => leaksIn(path.relative(dir, f), fs.readFileSync(f)))
        ]
        expect(leaks).toEqual([])
        const out = JSON.parse(json.stdout)
        expect(json.status).toBe(1)
        expect(out.finish.code).toBe("provider_failed")
        expect(out.finish.message).toContain(`Incorrect API key provided: [redacted] (other: [redacted])`)
        expect(out.transcripts).toHaveLength(2)
        expect(text.status).toBe(1)
        expect(text.stdout).toContain("Incorrect API key provided: [redacted]")
        // What the models wrote arrived, redacted.
        expect(fs.readFileSync(path.join(ws, "out.txt"), "utf8")).toBe("[redacted] [redacted]\n")
        expect(fs.readFileSync(path.join(ws, "docs/key.md"), "utf8")).toBe("[redacted]\n")
        expect(fs.readFileSync(out.transcripts[0], "utf8")).toContain("parent sees Incorrect API key provided: [redacted]")
      } finally {
        await server.close()
      }
    })
  }
})

describe("forkjoin config explain shows the models", () => {
  it("base URLs with their sources, the model, and each key as set or unset, never its value", async () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "forkjoin.config.json": JSON.stringify({ models: { model: "gpt-test", limits: { child: { maxSteps: 40 } } } }) })
    const r = await runCliAsync(["config", "explain", "--workspace", ws, "--json"], { OPENAI_API_KEY: "sk-very-secret", ANTHROPIC_BASE_URL: "http://127.0.0.1:8080" })
    expect(r.status).toBe(0)
    expect(r.stdout).not.toContain("sk-very-secret")
    const models = JSON.parse(r.stdout).models
    expect(models.provider).toEqual({ value: "openai", source: "built-in default" })
    expect(models.providers).toEqual([
      { name: "openai", baseUrl: "https://api.openai.com/v1", baseUrlSource: "built-in default", baseUrlEnv: "OPENAI_BASE_URL", model: "gpt-test", modelSource: "forkjoin.config.json models.model", apiKeyEnv: "OPENAI_API_KEY", apiKey: "set" },
      { name: "anthropic", baseUrl: "http://127.0.0.1:8080", baseUrlSource: "env ANTHROPIC_BASE_URL", baseUrlEnv: "ANTHROPIC_BASE_URL", model: null, modelSource: "none (pass --model NAME)", apiKeyEnv: "ANTHROPIC_API_KEY", apiKey: "unset" }
    ])
    expect(models.limits).toEqual({ parent: {}, child: { maxSteps: 40 } })
    const text = await runCliAsync(["config", "explain", "--workspace", ws], { OPENAI_API_KEY: "sk-very-secret" })
    expect(text.stdout).toMatch(/models\.providers\.openai: https:\/\/api\.openai\.com\/v1 \(built-in default\), model gpt-test .* key OPENAI_API_KEY set/)
    expect(text.stdout).not.toContain("sk-very-secret")
  })
})

describe("forkjoin run with prompt tasks", () => {
  const planWith = (dir: string) => {
    const planFile = path.join(dir, "plan.json")
    fs.writeFileSync(planFile, JSON.stringify({
      schemaVersion: 1,
      tasks: [
        { id: "docs", mode: "transactional_write", writeScope: ["docs"], prompt: "write docs" },
        { id: "src", mode: "transactional_write", writeScope: ["src"], actions: [{ apply_patch: { patch: "*** Begin Patch\n*** Add File: src/a.ts\n+a\n*** End Patch" } }, { finish: {} }] }
      ]
    }))
    return planFile
  }

  it("a model from the usual variables drives the prompt task; the join applies it with the scripted sibling", async () => {
    const { dir, ws } = makeSandbox()
    const server = await startModelServer("openai", forkTwo)
    try {
      writeTree(ws, { "forkjoin.config.json": JSON.stringify({ models: { model: "test-model" } }) })
      const r = await runCliAsync(["run", planWith(dir), "--workspace", ws, "--json"], { OPENAI_BASE_URL: server.url })
      expect(r.stderr).not.toContain("error")
      expect(r.status).toBe(0)
      const out = JSON.parse(r.stdout)
      expect(out.mergeExecution.outcomes.map((o: { childId: string; status: string }) => [o.childId, o.status])).toEqual([["docs", "applied"], ["src", "applied"]])
      expect(fs.readFileSync(path.join(ws, "docs/note.md"), "utf8")).toBe("by docs\n")
      // The child's conversation is kept as a versioned Transcript record.
      const transcript = Schema.decodeUnknownSync(Transcript)(
        JSON.parse(fs.readFileSync(path.join(ws, ".forkjoin", "runs", out.runId, "subagents", "docs", "transcript.json"), "utf8"))
      )
      expect(transcript.messages.some((m) => m.toolCalls?.some((c) => c.name === "apply_patch"))).toBe(true)
    } finally {
      await server.close()
    }
  })

  it("without a model, a plan with prompt tasks is a usage error before any child starts, naming what to configure", async () => {
    const { dir, ws } = makeSandbox()
    const r = await runCliAsync(["run", planWith(dir), "--workspace", ws], {})
    expect(r.status).toBe(2)
    expect(r.stderr).toContain("prompt tasks, which need a model")
    expect(fs.existsSync(path.join(ws, "src"))).toBe(false)
    expect(fs.existsSync(path.join(ws, ".forkjoin", "runs"))).toBe(false)
  })
})
