/**
 * What ends or disturbs a model session, against the loopback model server in each provider's
 * wire format: a 429 with `retry-after` (honoured), a 500 (retried, then a failure naming it),
 * a stalled stream (the timeout), malformed tool arguments (an observation, then the model
 * corrects itself), a model that never calls `finish` (step limit), the token budget, and bad
 * settings (missing key, unknown model, unreachable URL, non-JSON answers) each naming what to fix.
 * Hostile answers: one that never ends past `maxResponseBytes` (refused as soon as it passes,
 * the connection dropped), token counts that are negative or fractional (a protocol error, not
 * counted), and the API key echoed back (in an error, in tool arguments, split over stream
 * chunks or hidden behind JSON escapes), which must reach no file and no message.
 */
import * as ProviderSettings from "@forkjoin/drivers/ProviderSettings"
import * as Result from "effect/Result"
import * as Redaction from "@forkjoin/drivers/Redaction"
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
      const { outcome, ws, sleeps } = await runAgent({ kind, stream: false, script: first(1, { status: 429, retryAfter: "1" }) })
      expect(outcome.finish).toEqual({ ok: true })
      expect(fs.readFileSync(path.join(ws, "out.txt"), "utf8")).toBe("done\n")
      // After the 429 and before the next request, exactly the second it was told.
      expect(sleeps.filter((s) => s.requestsBefore === 1 && s.requestsAfter === 1).map((s) => s.ms)).toEqual([1000])
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
      const { outcome, server, sleeps } = await runAgent({ kind, stream: true, script: () => ({ stall: true }), provider: { timeoutMs: 300, maxRetries: 0 } })
      expect(outcome.stop?.reason).toBe("provider_failed")
      expect(outcome.stop?.message).toMatch(/stalled: nothing arrived for 300 ms.*models\.providers\.\w+\.timeoutMs/)
      // Ended by that timer alone: one request, and nothing else waited (no retry, no back-off).
      expect(server.requests).toHaveLength(1)
      expect(sleeps).toEqual([])
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

  describe(`${kind}: oversized and malformed answers`, () => {
    const FLOOD = 64 * 1024 * 1024
    const CAP = 64 * 1024
    for (const stream of [false, true]) {
      it(`an answer that passes maxResponseBytes (${stream ? "events" : "JSON"}) is refused as soon as it does, the connection dropped`, async () => {
        const { outcome, server } = await runAgent({
          kind,
          stream,
          script: () => ({ flood: FLOOD }),
          provider: { maxResponseBytes: CAP, maxRetries: 0, timeoutMs: 10_000 }
        })
        expect(outcome.stop?.reason).toBe("provider_response_too_large")
        expect(outcome.finish).toMatchObject({ ok: false, code: "provider_response_too_large" })
        expect(outcome.stop?.message).toContain(`models.providers.${kind}.maxResponseBytes`)
        // The server was still writing when the client hung up: the rest was never read.
        expect((await server.floodClosed).written).toBeLessThan(FLOOD)
        expect(server.requests).toHaveLength(1)
      })
    }

    it("an announced content-length past the cap is refused before the body is read", async () => {
      const { outcome } = await runAgent({ kind, stream: false, script: () => ({ flood: FLOOD, announce: true }), provider: { maxResponseBytes: CAP, maxRetries: 0, timeoutMs: 10_000 } })
      expect(outcome.stop?.reason).toBe("provider_response_too_large")
      expect(outcome.stop?.message).toContain(`announced an answer of ${FLOOD} bytes`)
    })

    for (const [name, usage] of [["negative", { input: -1_000_000, output: 5 }], ["fractional", { input: 10, output: 2.5 }]] as const) {
      it(`${name} token usage is a protocol error and is not counted`, async () => {
        const { outcome } = await runAgent({
          kind,
          stream: kind === "openai",
          script: (c) => (c.turn === 0 ? { calls: [{ name: "list_dir", args: { path: "." } }] } : { calls: [{ name: "finish", args: {} }], usage }),
          parent: { tokenBudget: 1_000 }
        })
        expect(outcome.stop?.reason).toBe("provider_protocol_error")
        expect(outcome.stop?.message).toMatch(/reported -1000000 input tokens|reported 2\.5 output tokens/)
        // Only the first answer (10 + 5, the server's default) counts; the bad one made no call either.
        expect(outcome.usage).toEqual({ inputTokens: 10, outputTokens: 5, modelCalls: 2 })
        expect(outcome.steps).toBe(1)
      })
    }
  })

  describe(`${kind}: an echoed API key`, () => {
    const echo = `Incorrect API key provided: ${SECRET}. Authorization: Bearer ${SECRET}`
    for (const status of [401, 500]) {
      it(`in a ${status} error body reaches neither the stop message nor the transcript`, async () => {
        const { outcome } = await runAgent({
          kind,
          stream: false,
          script: () => ({ status, body: JSON.stringify({ error: { message: echo } }) }),
          provider: { maxRetries: 0 }
        })
        expect(outcome.stop?.reason).toBe("provider_failed")
        expect(outcome.stop?.message).toContain(`Incorrect API key provided: ${Redaction.PLACEHOLDER}`)
        expect(outcome.stop?.message).not.toContain(SECRET)
        expect(fs.readFileSync(outcome.transcripts[0]!, "utf8")).not.toContain(SECRET)
      })
    }

    it("in tool arguments split over stream chunks and in text is redacted before it is used", async () => {
      const script = (c: Conversation): Turn =>
        c.turn === 0
          ? { calls: [{ name: "apply_patch", args: addFile("split.txt", `key ${SECRET}`) }], text: `my key is ${SECRET}` }
          : { calls: [{ name: "finish", args: {} }] }
      // The scripted server cuts every argument text in halves across two events.
      const { outcome, ws } = await runAgent({ kind, stream: true, script })
      expect(outcome.finish).toEqual({ ok: true })
      expect(fs.readFileSync(path.join(ws, "split.txt"), "utf8")).toBe(`key ${Redaction.PLACEHOLDER}\n`)
      const transcript = fs.readFileSync(outcome.transcripts[0]!, "utf8")
      expect(transcript).toContain(`my key is ${Redaction.PLACEHOLDER}`)
      expect(transcript).not.toContain(SECRET)
    })

    it("read from a workspace file is redacted in the transcript and the trace as they are written", async () => {
      const script = (c: Conversation): Turn =>
        c.turn === 0 ? { calls: [{ name: "read_file", args: { path: "notes.txt" } }] } : { calls: [{ name: "finish", args: {} }] }
      const { outcome, ws } = await runAgent({ kind, stream: false, script, files: { "notes.txt": `OPENAI_API_KEY=${SECRET}\n` } })
      expect(outcome.finish).toEqual({ ok: true })
      const transcript = fs.readFileSync(outcome.transcripts[0]!, "utf8")
      expect(transcript).toContain(`OPENAI_API_KEY=${Redaction.PLACEHOLDER}`)
      expect(transcript).not.toContain(SECRET)
      expect(fs.readFileSync(path.join(path.dirname(outcome.transcripts[0]!), "trace.json"), "utf8")).not.toContain(SECRET)
      // The file itself is the user's and stays as it is.
      expect(fs.readFileSync(path.join(ws, "notes.txt"), "utf8")).toContain(SECRET)
    })

    it("behind JSON unicode escapes in a tool call is redacted before it is used", async () => {
      const escaped = SECRET.split("").map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")
      const patch = `*** Begin Patch\\n*** Add File: esc.txt\\n+${escaped}\\n*** End Patch`
      const body = kind === "openai"
        ? `{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"apply_patch","arguments":${JSON.stringify(`{"patch": "${patch}"}`)}}}]},"finish_reason":"tool_calls"}]}`
        : `{"content":[{"type":"tool_use","id":"t1","name":"apply_patch","input":{"patch":"${patch}"}}],"stop_reason":"tool_use"}`
      expect(body).not.toContain(SECRET)
      const script = (c: Conversation): Turn => (c.turn === 0 ? { status: 200, body } : { calls: [{ name: "finish", args: {} }] })
      const { outcome, ws } = await runAgent({ kind, stream: false, script })
      expect(outcome.finish).toEqual({ ok: true })
      expect(fs.readFileSync(path.join(ws, "esc.txt"), "utf8")).toBe(`${Redaction.PLACEHOLDER}\n`)
      expect(fs.readFileSync(outcome.transcripts[0]!, "utf8")).not.toContain(SECRET)
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
