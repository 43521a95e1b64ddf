/**
 * A malformed id anywhere in a gateway request (a thread, turn, run, conflict, transaction,
 * record or agent session id, in a path, a query or a body) answers through the real server
 * with one stable code, `request_invalid` (the CLI's and engine's code for a refused id): 400,
 * the RFC 9457 problem naming the field and the rule, on every route family and on both apply
 * paths (the fast one and the router). A well-formed id of nothing is still 404.
 */
import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { call, makeWorkspace, patchOf, registerThread, servedWorkspace, start, tokenFor } from "./support.ts"

const fx = servedWorkspace({ "a.txt": "one\n" })

const q = encodeURIComponent
const LONG = "x".repeat(1100)

/** Each route family with a malformed id: the request and the field its refusal names. */
const CASES: ReadonlyArray<readonly [label: string, url: string, body: unknown, field: ReadonlyArray<string>]> = [
  ["timeline thread", `/v1/timeline?thread=${q("../x")}`, undefined, ["query", "thread"]],
  ["timeline turn", `/v1/timeline?turn=${q("a//b")}`, undefined, ["query", "turn"]],
  ["turn", `/v1/turns/${q("../x")}`, undefined, ["params", "turn"]],
  ["run", `/v1/runs/${q("../x")}`, undefined, ["params", "runId"]],
  ["conflicts runId", `/v1/conflicts?runId=${q("a\u0000b")}`, undefined, ["query", "runId"]],
  ["resolve conflict", `/v1/conflicts/${q("a\u0000b")}/resolve`, { kind: "discard" }, ["params", "conflictId"]],
  ["rollback transaction", `/v1/transactions/${q("../x")}/rollback`, {}, ["params", "transactionId"]],
  ["view grant thread", `/v1/threads/${q("../x")}/view-grants`, { path: "a.txt" }, ["params", "thread"]],
  ["agent session", `/v1/agents/${q("../x")}`, undefined, ["params", "agentId"]],
  ["diff target", `/v1/diff?target=${q(LONG)}`, undefined, ["query", "target"]],
  ["apply thread", "/v1/apply", { patch: patchOf("*** Add File: made.txt", "+x"), thread: "../x" }, ["payload", "thread"]],
  ["apply turn", "/v1/apply", { patch: patchOf("*** Add File: made.txt", "+x"), turn: "" }, ["payload", "turn"]],
  ["provider event thread", "/v1/provider-events", { format: "codex-turn-diff", text: "diff --git a/a.txt b/a.txt\n", thread: "a//b" }, [
    "payload",
    "thread"
  ]]
]

describe("a malformed id is request_invalid on every route", () => {
  it.each(CASES)("%s", async (_label, url, body, field) => {
    const answer = await call(`${fx.gw.url}${url}`, body === undefined ? { token: fx.token } : { token: fx.token, body })
    expect({ status: answer.status, code: answer.json?.code, paths: answer.json?.errors?.map((e: { path: unknown }) => e.path) }).toEqual({
      status: 400,
      code: "request_invalid",
      paths: [field]
    })
    expect(answer.json.errors[0].message).not.toBe("")
    expect(fs.existsSync(`${fx.w.ws}/made.txt`)).toBe(false)
  })

  it("the router's apply (the fast path off) refuses it the same way", async () => {
    const other = makeWorkspace({ "a.txt": "one\n" })
    const routed = await start({ root: other.ws, pollMs: 50, fastApply: false })
    try {
      await registerThread(other.ws, other.db, "main")
      const token = (await tokenFor(other.db, "main")).token
      const answer = await call(`${routed.url}/v1/apply`, { token, body: { patch: patchOf("*** Add File: made.txt", "+x"), thread: "../x" } })
      expect({ status: answer.status, code: answer.json?.code, paths: answer.json?.errors?.map((e: { path: unknown }) => e.path) }).toEqual({
        status: 400,
        code: "request_invalid",
        paths: [["payload", "thread"]]
      })
      expect(fs.existsSync(`${other.ws}/made.txt`)).toBe(false)
    } finally {
      await routed.stop()
      fs.rmSync(other.dir, { recursive: true, force: true })
    }
  })

  it("a well-formed id of nothing is still 404", async () => {
    for (const url of ["/v1/runs/run-none", "/v1/agents/agent-none", "/v1/diff?target=rec-none"]) {
      expect((await call(`${fx.gw.url}${url}`, { token: fx.token })).status, url).toBe(404)
    }
  })
})
