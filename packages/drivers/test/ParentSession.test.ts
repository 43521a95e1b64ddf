/**
 * `forkjoin agent`'s parent session against a loopback model server speaking each provider's
 * real wire format, JSON and server-sent events: a parent forks three model-driven children
 * (one first writes outside its scope, reads the refusal and corrects itself), the join lands
 * them, and the parent finishes; a held conflict must be resolved before `finish` is accepted.
 */
import { afterAll, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Conversation, Turn } from "./support/modelServer.ts"
import { addFile, updateLine } from "./support/modelServer.ts"
import { isParent, removeSandboxes, runAgent, SECRET } from "./support/agent.ts"

afterAll(removeSandboxes)

const COMBOS = [
  { kind: "openai", stream: false },
  { kind: "openai", stream: true },
  { kind: "anthropic", stream: false },
  { kind: "anthropic", stream: true }
] as const

/** Parent forks a, b, c; b first writes outside its scope, then writes inside it: its refused write keeps b out of the join. */
const forkThree = (c: Conversation): Turn => {
  if (isParent(c.system)) {
    if (c.turn === 0) {
      return {
        calls: [{
          name: "run_subagents",
          args: {
            tasks: ["a", "b", "c"].map((id) => ({ id, mode: "transactional_write", writeScope: [id], prompt: `create ${id}/${id}.txt` }))
          }
        }]
      }
    }
    return { calls: [{ name: "finish", args: {} }] }
  }
  const id = c.task.slice("create ".length, "create ".length + 1)
  if (id === "b") {
    if (c.turn === 0) return { calls: [{ name: "apply_patch", args: addFile("a/evil.txt", "not mine") }] }
    if (c.turn === 1) {
      const refusal = c.results[0]?.content
      return typeof refusal === "object" && refusal.code === "write_scope_violation"
        ? { calls: [{ name: "apply_patch", args: addFile("b/b.txt", "from b") }] }
        : { text: "unexpected" }
    }
    return { calls: [{ name: "finish", args: {} }] }
  }
  if (c.turn === 0) return { calls: [{ name: "apply_patch", args: addFile(`${id}/${id}.txt`, `from ${id}`) }] }
  return { calls: [{ name: "finish", args: {} }] }
}

describe("the parent session forks children, joins them and finishes", () => {
  for (const combo of COMBOS) {
    it(`${combo.kind}, ${combo.stream ? "streaming" : "JSON"}`, async () => {
      const { outcome, server, ws, progress } = await runAgent({ ...combo, script: forkThree })
      expect(outcome.finish).toEqual({ ok: true })
      expect(outcome.status).toBe("finished")
      for (const id of ["a", "c"]) expect(fs.readFileSync(path.join(ws, id, `${id}.txt`), "utf8")).toBe(`from ${id}\n`)
      // A child that tried to write outside its scope is not applied at all, even its in-scope file.
      expect(fs.existsSync(path.join(ws, "a", "evil.txt"))).toBe(false)
      expect(fs.existsSync(path.join(ws, "b", "b.txt"))).toBe(false)
      expect(outcome.runs).toHaveLength(1)
      expect(outcome.runs[0]!.run.outcomes.map((o) => [o.childId, o.status])).toEqual([["a", "applied"], ["b", "scope_violation"], ["c", "applied"]])
      expect(outcome.runs[0]!.run.outcomes[1]!.refusals).toEqual([expect.objectContaining({ tool: "apply_patch", path: "a/evil.txt", code: "write_scope_violation" })])
      // The refusal reached child b as a tool result, and b's trace keeps it.
      const b = outcome.runs[0]!.results.find((r) => r.id === "b")!
      expect(b.observations.map((s) => s.observation.code ?? "ok")).toEqual(["write_scope_violation", "ok", "ok"])
      // Every request streamed (or not) as configured, with the key in a header only.
      expect(server.requests.every((r) => (r.body.stream === true) === combo.stream)).toBe(true)
      const keyHeader = combo.kind === "openai" ? server.requests[0]!.headers.authorization : server.requests[0]!.headers["x-api-key"]
      expect(keyHeader).toContain(SECRET)
      // Children see only their tools; the parent sees run_subagents.
      const parentTools = combo.kind === "openai" ? server.requests[0]!.body.tools.map((t: any) => t.function.name) : server.requests[0]!.body.tools.map((t: any) => t.name)
      expect(parentTools).toContain("run_subagents")
      const childRequest = server.requests.find((r) => !isParent(combo.kind === "openai" ? r.body.messages[0].content : r.body.system))!
      const childTools = combo.kind === "openai" ? childRequest.body.tools.map((t: any) => t.function.name) : childRequest.body.tools.map((t: any) => t.name)
      expect(childTools).toEqual(["read_file", "list_dir", "apply_patch", "finish"])
      // Live progress: the parent's and the children's steps, and the join.
      expect(progress).toContain("b: apply_patch refused (write_scope_violation)")
      expect(progress).toContain("joined c: applied")
      expect(progress).toContain("joined b: scope_violation")
      // The parent hears that the run was partial, after the join.
      expect(progress.indexOf("parent: run_subagents refused (merge_partial)")).toBeGreaterThan(progress.indexOf("joined c: applied"))
      // Transcripts: the parent's and each child's, none carrying the key.
      expect(outcome.transcripts).toHaveLength(4)
      for (const t of outcome.transcripts) {
        const text = fs.readFileSync(t, "utf8")
        expect(text).not.toContain(SECRET)
        const file = JSON.parse(text)
        expect(file.messages.length).toBeGreaterThan(2)
        expect(file.stop).toBeUndefined()
        expect(file.usage.modelCalls).toBeGreaterThan(1)
      }
    })
  }
})

/** Two children change the same line: the join holds one back; the parent must resolve it. */
const conflicting = (c: Conversation): Turn => {
  if (isParent(c.system)) {
    switch (c.turn) {
      case 0:
        return {
          calls: [{
            name: "run_subagents",
            args: { tasks: ["x", "y"].map((id) => ({ id, mode: "transactional_write", writeScope: ["shared.txt"], prompt: `edit as ${id}` })) }
          }]
        }
      case 1:
        // Ignore the held conflict and try to finish: refused.
        return { calls: [{ name: "finish", args: {} }] }
      case 2: {
        const refusal = c.results[0]?.content
        const conflictId = typeof refusal === "object" ? refusal.data?.openConflicts?.[0]?.conflictId : undefined
        return { calls: [{ name: "resolve_conflict", args: { conflictId, resolution: "content", content: "line by both\n" } }] }
      }
      default:
        return { calls: [{ name: "finish", args: {} }] }
    }
  }
  const id = c.task.slice("edit as ".length)
  if (c.turn === 0) return { calls: [{ name: "apply_patch", args: updateLine("shared.txt", "line", `line by ${id}`) }] }
  return { calls: [{ name: "finish", args: {} }] }
}

describe("a held conflict comes back to the parent", () => {
  for (const combo of [COMBOS[0], COMBOS[3]]) {
    it(`finish is refused until the parent resolves it (${combo.kind}, ${combo.stream ? "streaming" : "JSON"})`, async () => {
      const { outcome, ws, server } = await runAgent({ ...combo, script: conflicting, files: { "shared.txt": "line\n" } })
      expect(outcome.finish).toEqual({ ok: true })
      const parentRequests = server.requests.filter((r) => isParent(combo.kind === "openai" ? r.body.messages[0].content : r.body.system))
      expect(parentRequests).toHaveLength(4)
      const codes = outcome.runs[0]!.conflicts.map((x) => x.status)
      expect(codes).toEqual(["open"])
      expect(fs.readFileSync(path.join(ws, "shared.txt"), "utf8")).toBe("line by both\n")
      // The join's observation and the refused finish, in the parent's trace.
      const trace = JSON.parse(fs.readFileSync(path.join(path.dirname(outcome.transcripts[0]!), "trace.json"), "utf8"))
      expect(trace.hostSteps.map((s: any) => [Object.keys(s.action)[0], s.observation.code ?? "ok"])).toEqual([
        ["run_subagents", "unresolved_subagent_conflicts"],
        ["finish", "unresolved_subagent_conflicts"],
        ["resolve_conflict", "ok"]
      ])
    })
  }
})

describe("a child's limits", () => {
  it("a child over its token budget stops, exports nothing, and its transcript says why", async () => {
    let joined: any
    const script = (c: Conversation): Turn => {
      if (isParent(c.system)) {
        if (c.turn === 0) {
          return { calls: [{ name: "run_subagents", args: { tasks: [{ id: "big", mode: "transactional_write", writeScope: ["big"], prompt: "spend" }] } }] }
        }
        joined = c.results[0]?.content
        return { calls: [{ name: "finish", args: {} }] }
      }
      return { calls: [{ name: "apply_patch", args: addFile(`big/f${c.turn}.txt`, "x") }], usage: { input: 50, output: 50 } }
    }
    const { outcome, ws } = await runAgent({ kind: "openai", stream: false, script, child: { tokenBudget: 150 } })
    expect(outcome.finish).toEqual({ ok: true })
    const child = outcome.runs[0]!.results[0]!
    expect(child.status).toBe("driver_stopped")
    expect(child.observations).toHaveLength(2)
    expect(joined.data.children[0].status).not.toBe("applied")
    expect(fs.existsSync(path.join(ws, "big"))).toBe(false)
    const transcript = JSON.parse(fs.readFileSync(path.join(child.artifacts, "transcript.json"), "utf8"))
    expect(transcript.stop).toMatchObject({ reason: "budget_exhausted" })
    expect(transcript.usage).toMatchObject({ inputTokens: 100, outputTokens: 100, modelCalls: 2 })
  })
})
