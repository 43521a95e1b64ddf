/**
 * A provider event the workspace policy denies, through the real server: `POST
 * /v1/provider-events` claiming a `.git` or `.forkjoin` path is a 400 whose `reason` is the
 * stable code `path_denied_by_policy` (the engine's own), and nothing is recorded.
 */
import * as fs from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, makeWorkspace, type Started, start, tokenFor } from "./support.ts"

let gw: Started
let w: ReturnType<typeof makeWorkspace>
let token: string

beforeAll(async () => {
  w = makeWorkspace({ "a.txt": "one\n" })
  gw = await start({ root: w.ws, pollMs: 50 })
  token = (await tokenFor(w.db, "cli")).token
})

afterAll(async () => {
  await gw?.stop()
  fs.rmSync(w.dir, { recursive: true, force: true })
})

describe("a denied provider event", () => {
  it("is answered with the stable code path_denied_by_policy and records nothing", async () => {
    const events = [
      { format: "codex-turn-diff", text: "--- a/.git/hooks/pre-commit\n+++ b/.git/hooks/pre-commit\n@@ -1 +1 @@\n-a\n+b\n" },
      { format: "claude-tool-event", text: JSON.stringify({ tool_name: "Write", tool_input: { file_path: "docs/.forkjoin/x", content: "x\n" } }) }
    ]
    for (const e of events) {
      const r = await call(`${gw.url}/v1/provider-events`, { token, body: { ...e, turn: "p1" } })
      expect(r.status, r.text).toBe(400)
      expect(r.json).toMatchObject({ _tag: "BadRequest", reason: "path_denied_by_policy" })
      expect(r.json.message).toMatch(/\.git|\.forkjoin/)
    }
    const timeline = await call(`${gw.url}/v1/timeline?limit=10`, { token })
    expect(timeline.status).toBe(200)
    expect(timeline.json.items).toEqual([])
  })
})
