/**
 * What ends or disturbs a model session, against the loopback model server in each provider's
 * wire format: a 429 with `retry-after` (honoured), a 500 (retried, then a failure naming it),
 * a stalled stream (the timeout), malformed tool arguments (an observation, then the model
 * corrects itself), a model that never calls `finish` (step limit), the token budget, and bad
 * settings (missing key, unknown model, unreachable URL, non-JSON answers) each naming what to fix.
 */
import * as ProviderSettings from "@forkjoin/drivers/ProviderSettings"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { removeSandboxes, runAgent, SECRET } from "./support/agent.ts"
import { addFile, type Conversation, type Turn } from "./support/modelServer.ts"

afterAll(removeSandboxes)

/** A parent that writes one file, then finishes. */
const writeThenFinish = (c: Conversation): Turn =>
  c.turn === 0 ? { calls: [{ name: "apply_patch", args: addFile("out.txt", "done") }] } : { calls: [{ name: "finish", args: {} }] }

/** `script` for the first `n` requests, then `writeThenFinish`. */
const first = (n: number, turn: Turn) => (c: Conversation): Turn => (c.request < n ? turn : writeThenFinish(c))

for (const kind of ["openai", "anthropic"] as const) {
  describe(`${kind}: retries`, () => {
    it("a 429 with retry-after waits as told, then succeeds", async () => {
      const { outcome, server, ws } = await runAgent({ kind, stream: false, script: first(1, { status: 429, retryAfter: "1" }) })
      expect(outcome.finish).toEqual({ ok: true })
      expect(fs.readFileSync(path.join(ws, "out.txt"), "utf8")).toBe("done\n")
      expect(server.requests[1]!.at - server.requests[0]!.at).toBeGreaterThanOrEqual(950)
    })

    it("a 500 is retried with backoff, then succeeds", async () => {
      const { outcome, server } = await runAgent({ kind, stream: true, script: first(2, { status: 500 }) })
      expect(outcome.finish).toEqual({ ok: true })
      expect(server.requests).toHaveLength(4)
    })

    it("a 500 that persists ends the session as a provider failure naming it", async () => {
      const { outcome, server } = await runAgent({ kind, stream: false, script: () => ({ status: 500 }), provider: { maxRetries: 2 } })
      expect(outcome.finish.ok).toBe(false)
      expect(outcome.stop?.reason).toBe("provider_failed")
      expect(outcome.stop?.message).toMatch(/HTTP 500 .* after 3 attempt/)
      expect(server.requests).toHaveLength(3)
    })
  })

  describe(`${kind}: runaway and broken models`, () => {
    it("a stalled stream hits the timeout", async () => {
      const { outcome, elapsedMs } = await runAgent({ kind, stream: true, script: () => ({ stall: true }), provider: { timeoutMs: 300, maxRetries: 0 } })
      expect(outcome.stop?.reason).toBe("provider_failed")
      expect(outcome.stop?.message).toMatch(/stalled: nothing arrived for 300 ms.*models\.providers\.\w+\.timeoutMs/)
      expect(elapsedMs).toBeLessThan(4_000)
    })

    it("malformed tool arguments become an observation, and the model corrects itself", async () => {
      const script = (c: Conversation): Turn => {
        if (c.turn === 0) return { calls: [{ name: "apply_patch", raw: "{\"patch\": \"*** Begin Patch" }] }
        if (c.turn === 1) {
          const r = c.results[0]?.content
          return typeof r === "object" && r.code === "invalid_action" ? { calls: [{ name: "apply_patch", args: addFile("out.txt", "done") }] } : { text: "?" }
        }
        return { calls: [{ name: "finish", args: {} }] }
      }
      // Anthropic's JSON answers carry an object; its streamed partial JSON can be malformed.
      const { outcome, ws } = await runAgent({ kind, stream: kind === "anthropic", script })
      expect(outcome.finish).toEqual({ ok: true })
      expect(fs.readFileSync(path.join(ws, "out.txt"), "utf8")).toBe("done\n")
    })

    it("wrongly typed arguments and an unknown tool are refused as observations", async () => {
      const script = (c: Conversation): Turn => {
        if (c.turn === 0) return { calls: [{ name: "read_file", args: { path: 42 } }, { name: "delete_everything", args: {} }] }
        if (c.turn === 1) {
          const codes = c.results.map((r) => (typeof r.content === "object" ? r.content.code : r.content))
          return codes.join(",") === "invalid_action,unknown_action" ? writeThenFinish({ ...c, turn: 0 }) : { text: codes.join(",") }
        }
        return { calls: [{ name: "finish", args: {} }] }
      }
      const { outcome } = await runAgent({ kind, stream: false, script })
      expect(outcome.finish).toEqual({ ok: true })
    })

    it("a model that never calls finish stops at the step limit", async () => {
      const { outcome, server } = await runAgent({
        kind,
        stream: false,
        script: () => ({ calls: [{ name: "list_dir", args: { path: "." } }] }),
        parent: { maxSteps: 5 }
      })
      expect(outcome.finish).toMatchObject({ ok: false, code: "step_limit" })
      expect(server.requests.length).toBe(5)
    })

    it("the token budget ends a model that keeps going", async () => {
      const { outcome, server } = await runAgent({
        kind,
        stream: true,
        script: () => ({ calls: [{ name: "list_dir", args: { path: "." } }], usage: { input: 400, output: 200 } }),
        parent: { tokenBudget: 1_000 }
      })
      expect(outcome.finish).toMatchObject({ ok: false, code: "budget_exhausted" })
      expect(outcome.usage.inputTokens + outcome.usage.outputTokens).toBe(1_200)
      expect(server.requests).toHaveLength(2)
    })

    it("a model answering in text only is nudged, then given up on", async () => {
      const { outcome, server } = await runAgent({ kind, stream: false, script: () => ({ text: "I think I am done." }) })
      expect(outcome.finish).toMatchObject({ ok: false, code: "no_tool_call" })
      expect(server.requests).toHaveLength(3)
    })
  })

  describe(`${kind}: bad settings name what to fix`, () => {
    it("an unknown model (404) names the model setting", async () => {
      const { outcome } = await runAgent({ kind, stream: false, script: () => ({ status: 404, body: "{\"error\":{\"message\":\"model 'test-model' not found\"}}" }) })
      expect(outcome.stop?.message).toMatch(new RegExp(`unknown model 'test-model' \\(models\\.providers\\.${kind}\\.model\\)`))
    })

    it("a non-JSON answer names the base URL setting", async () => {
      const { outcome } = await runAgent({ kind, stream: false, script: () => ({ raw: "<html>hello</html>" }) })
      expect(outcome.stop?.message).toMatch(new RegExp(`not JSON.*check models\\.providers\\.${kind}\\.baseUrl`))
    })

    it("an unreachable base URL names the base URL setting", async () => {
      const port = await new Promise<number>((resolve) => {
        const s = net.createServer().listen(0, "127.0.0.1", () => {
          const p = (s.address() as net.AddressInfo).port
          s.close(() => resolve(p))
        })
      })
      const { outcome } = await runAgent({
        kind,
        stream: false,
        script: writeThenFinish,
        provider: { baseUrl: `http://127.0.0.1:${port}`, maxRetries: 0 }
      })
      expect(outcome.stop?.message).toMatch(new RegExp(`cannot reach http://127\\.0\\.0\\.1:${port}.*ECONNREFUSED.*check models\\.providers\\.${kind}\\.baseUrl`))
      expect(outcome.stop?.message).not.toContain(SECRET)
    })

    it("a public endpoint without a key is refused before any request, naming the variable", () => {
      const r = ProviderSettings.resolve({ kind, model: "m" }, {}, `models.providers.${kind}`)
      expect(Result.isFailure(r)).toBe(true)
      if (Result.isFailure(r)) expect(r.failure.message).toContain(kind === "openai" ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY")
      const local = ProviderSettings.resolve({ kind, model: "m", baseUrl: "http://localhost:11434/v1" }, {}, "env")
      expect(Result.isSuccess(local)).toBe(true)
    })
  })
}
