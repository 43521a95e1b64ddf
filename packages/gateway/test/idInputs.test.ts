/**
 * Ids given to the gateway (query and path parameters, request bodies: thread, turn and run ids)
 * attacked through the real server: a traversal (`../x`), an empty id, an empty segment
 * (`a//b`), 300 characters and a NUL are each refused as a bad request (400, the field and the
 * one id rule named) before any view, store or engine sees them, on every entry point; a good
 * id is still answered, and nothing is written.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { BAD_IDS } from "../../../test/support/badIds.ts"
import { call, patchOf, servedWorkspace } from "./support.ts"

const fx = servedWorkspace({ "a.txt": "one\n" })

const BAD = BAD_IDS
// A path parameter cannot be empty (the route would not match): the other four.
const BAD_IN_PATH = BAD.filter(([, id]) => id !== "")

const q = encodeURIComponent

/** The refusal of a bad `id` in the request field `where`: 400, the one field, the id and the rule. */
const expectRefused = (answer: Awaited<ReturnType<typeof call>>, where: ReadonlyArray<string>, id: string, problem: string) => {
  expect({ status: answer.status, paths: answer.json?.errors?.map((e: any) => e.path) }).toEqual({ status: 400, paths: [where] })
  expect(answer.json.errors[0].message).toContain(`the id ${JSON.stringify(id)} is refused (${problem})`)
}

describe("ids given to the gateway follow the one id rule", () => {
  it.each(BAD)("GET /v1/timeline?thread=%s and ?turn= are refused as bad requests", async (_label, id, problem) => {
    expectRefused(await call(`${fx.gw.url}/v1/timeline?thread=${q(id)}`, { token: fx.token }), ["query", "thread"], id, problem)
    expectRefused(await call(`${fx.gw.url}/v1/timeline?turn=${q(id)}`, { token: fx.token }), ["query", "turn"], id, problem)
  })

  it.each(BAD_IN_PATH)("GET /v1/turns/%s is refused as a bad request", async (_label, id, problem) => {
    expectRefused(await call(`${fx.gw.url}/v1/turns/${q(id)}`, { token: fx.token }), ["params", "turn"], id, problem)
  })

  it.each(BAD_IN_PATH)("GET /v1/runs/%s is refused as a bad request", async (_label, id, problem) => {
    expectRefused(await call(`${fx.gw.url}/v1/runs/${q(id)}`, { token: fx.token }), ["params", "runId"], id, problem)
  })

  it.each(BAD)("GET /v1/conflicts?runId=%s is refused as a bad request", async (_label, id, problem) => {
    expectRefused(await call(`${fx.gw.url}/v1/conflicts?runId=${q(id)}`, { token: fx.token }), ["query", "runId"], id, problem)
  })

  it.each(BAD_IN_PATH)("POST /v1/threads/%s/view-grants is refused as a bad request", async (_label, id, problem) => {
    expectRefused(await call(`${fx.gw.url}/v1/threads/${q(id)}/view-grants`, { token: fx.token, body: { path: "a.txt" } }), ["params", "thread"], id, problem)
  })

  it.each(BAD)("POST /v1/apply with thread or turn %s is refused as a bad request, nothing written", async (_label, id, problem) => {
    const patch = patchOf("*** Add File: made.txt", "+x")
    expectRefused(await call(`${fx.gw.url}/v1/apply`, { token: fx.token, body: { patch, thread: id, turn: "t" } }), ["payload", "thread"], id, problem)
    expectRefused(await call(`${fx.gw.url}/v1/apply`, { token: fx.token, body: { patch, turn: id } }), ["payload", "turn"], id, problem)
    expect(fs.existsSync(path.join(fx.w.ws, "made.txt"))).toBe(false)
  })

  it.each(BAD)("POST /v1/provider-events with thread or turn %s is refused as a bad request", async (_label, id, problem) => {
    const event = { format: "codex-turn-diff", text: "diff --git a/a.txt b/a.txt\n" }
    expectRefused(await call(`${fx.gw.url}/v1/provider-events`, { token: fx.token, body: { ...event, thread: id, turn: "t" } }), ["payload", "thread"], id, problem)
    expectRefused(await call(`${fx.gw.url}/v1/provider-events`, { token: fx.token, body: { ...event, turn: id } }), ["payload", "turn"], id, problem)
  })

  it("good ids are still answered", async () => {
    expect((await call(`${fx.gw.url}/v1/timeline?thread=main`, { token: fx.token })).status).toBe(200)
    expect((await call(`${fx.gw.url}/v1/timeline?turn=t-1`, { token: fx.token })).status).toBe(200)
    expect((await call(`${fx.gw.url}/v1/turns/t-1`, { token: fx.token })).status).toBe(200)
    expect((await call(`${fx.gw.url}/v1/runs/run-none`, { token: fx.token })).status).toBe(404)
  })
})
