/**
 * Merge runs through the gateway: a run made by `forkjoin run` in another process, its
 * children's outcomes and its held conflict; who sees what (the run's caller, a child's token,
 * an unrelated thread); resolving over HTTP (bad kinds refused, a second resolution refused);
 * rolling a transaction back; and the event stream carrying the run's changes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { buildCli, call, conflictCase, openEvents, runCli, type Started, start, tokenFor } from "./support.ts"

let gw: Started
let c: ReturnType<typeof conflictCase>
let runId: string
let cli: string
let firstChild: string
let stranger: string

beforeAll(async () => {
  buildCli()
  c = conflictCase()
  gw = await start({ root: c.ws, pollMs: 50 })
  const r = runCli(["run", c.planFile, "--workspace", c.ws, "--json"])
  runId = JSON.parse(r.stdout).runId
  cli = (await tokenFor(c.db, "cli")).token
  firstChild = (await tokenFor(c.db, `${runId}/first`)).token
  stranger = (await tokenFor(c.db, "stranger")).token
})

afterAll(async () => {
  await gw?.stop()
  fs.rmSync(c.dir, { recursive: true, force: true })
})

describe("merge runs", () => {
  it("the caller's token lists the run with each child's outcome and its open conflict", async () => {
    const runs = await call(`${gw.url}/v1/runs`, { token: cli })
    expect(runs.status).toBe(200)
    expect(runs.json.runs.map((r: any) => r.runId)).toEqual([runId])
    const detail = await call(`${gw.url}/v1/runs/${encodeURIComponent(runId)}`, { token: cli })
    expect(detail.json.run.status).toBe("blocked")
    expect(detail.json.run.outcomes.map((o: any) => [o.childId, o.status])).toEqual([["first", "applied"], ["second", "conflicted_unresolved"]])
    expect(detail.json.conflicts).toHaveLength(1)
    expect(detail.json.conflicts[0]).toMatchObject({ childId: "second", path: "m/f.txt", status: "open" })
    expect(detail.json.conflicts[0].text).toContain("<<<<<<< workspace")
    expect(detail.json.conflicts[0].text).toContain(">>>>>>> second")
  })

  it("a child's token sees only its own thread: not the run, not the sibling's conflict; a stranger sees nothing", async () => {
    expect((await call(`${gw.url}/v1/runs`, { token: firstChild })).json.runs).toEqual([])
    expect((await call(`${gw.url}/v1/runs/${encodeURIComponent(runId)}`, { token: firstChild })).status).toBe(404)
    expect((await call(`${gw.url}/v1/conflicts`, { token: firstChild })).json.conflicts).toEqual([])
    const own = await call(`${gw.url}/v1/timeline`, { token: firstChild })
    expect(own.status).toBe(200)
    expect(own.json.items.every((r: any) => r.threadId === `${runId}/first`)).toBe(true)
    expect(own.json.items.length).toBeGreaterThan(0)
    expect((await call(`${gw.url}/v1/runs/${encodeURIComponent(runId)}`, { token: stranger })).status).toBe(404)
    expect((await call(`${gw.url}/v1/runs/no-such-run`, { token: cli })).status).toBe(404)
    const conflictId = `${runId}/second:m/f.txt`
    const foreign = await call(`${gw.url}/v1/conflicts/${encodeURIComponent(conflictId)}/resolve`, { token: firstChild, body: { kind: "apply" } })
    expect(foreign.status).toBe(404)
  })

  it("resolves the held conflict over HTTP; bad kinds are 400 and a second resolution is refused; the stream says so", async () => {
    const conflictId = `${runId}/second:m/f.txt`
    const url = `${gw.url}/v1/conflicts/${encodeURIComponent(conflictId)}/resolve`
    expect((await call(url, { token: cli, body: { kind: "merge" } })).status).toBe(400)
    expect((await call(url, { token: cli, body: { kind: "content" } })).json).toMatchObject({ _tag: "BadRequest" })
    expect((await call(url, { token: cli, body: { kind: "apply", content: "x" } })).status).toBe(400)
    const events = await openEvents(gw.url, cli)
    const until = events.until
    await until(/event: hello/)
    const merged = "F1-first and second\nf2\nf3\nf4\nf5\nf6\n"
    const r = await call(url, { token: cli, body: { kind: "content", content: merged } })
    expect(r.status).toBe(200)
    expect(r.json.conflict).toMatchObject({ status: "resolved", resolution: { kind: "content" } })
    expect(r.json.outcome).toMatchObject({ childId: "second", status: "resolved" })
    expect(fs.readFileSync(path.join(c.ws, "m/f.txt"), "utf8")).toBe(merged)
    expect(fs.readFileSync(path.join(c.ws, "m/other.txt"), "utf8")).toBe("O1\n")
    await until(/event: run\ndata: .*"status":"applied"/)
    events.close()
    const again = await call(url, { token: cli, body: { kind: "discard" } })
    expect(again).toMatchObject({ status: 422, json: { code: "conflict_already_resolved" } })
  })

  it("rolls back a transaction the caller sees; one it does not see is 404; a drifted one is refused with ?strict=true", async () => {
    const tx = `conflict_resolution:${runId}/second:m/f.txt`
    expect((await call(`${gw.url}/v1/transactions/${encodeURIComponent(tx)}/rollback`, { token: firstChild, method: "POST" })).status).toBe(404)
    const unknownTx = "patch:00000000-0000-4000-8000-000000000000"
    expect((await call(`${gw.url}/v1/transactions/${encodeURIComponent(unknownTx)}/rollback`, { token: cli, method: "POST" })).status).toBe(404)
    // Not a transaction id at all: a precise 400 naming the parameter.
    const malformed = await call(`${gw.url}/v1/transactions/no-such-tx/rollback`, { token: cli, method: "POST" })
    expect(malformed.status).toBe(400)
    expect(malformed.json.errors[0].path).toEqual(["params", "transactionId"])
    const firstTx = `subagent_merge:${runId}/first`
    const drift = await call(`${gw.url}/v1/transactions/${encodeURIComponent(firstTx)}/rollback?strict=true`, { token: cli, method: "POST" })
    expect(drift).toMatchObject({ status: 422, json: { code: "rollback_drift" } })
    const back = await call(`${gw.url}/v1/transactions/${encodeURIComponent(tx)}/rollback`, { token: cli, method: "POST" })
    expect(back.status).toBe(200)
    expect(back.json.links.rollbackOf).toBe(tx)
    expect(fs.readFileSync(path.join(c.ws, "m/f.txt"), "utf8")).toContain("F1-first\n")
  })
})
