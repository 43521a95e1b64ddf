/**
 * The gateway's history views at the read boundary: with a credential in `.git/config`, no
 * provider event can make history claim it (refused, nothing recorded) and no view output
 * (`/v1/files`, `/v1/diff`, `/v1/timeline`) contains it, directly or through a link to `.git`.
 * A view over a file edited on disk reports the change and records nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { call, makeWorkspace, patchOf, registerThread, type Started, start, tokenFor } from "./support.ts"

const SECRET = "ghp_gatewayS3cretThatMustNeverLeak"

let gw: Started
let w: ReturnType<typeof makeWorkspace>
let token: string

beforeAll(async () => {
  w = makeWorkspace({ "a.txt": "one\n", ".git/config": `[credential]\n\ttoken = ${SECRET}\n` })
  fs.symlinkSync(".git", path.join(w.ws, "g"))
  gw = await start({ root: w.ws, maxBodyBytes: 256 * 1024, pollMs: 50 })
  await registerThread(w.ws, w.db, "T")
  token = (await tokenFor(w.db, "T")).token
})

afterAll(async () => {
  await gw?.stop()
  fs.rmSync(w.dir, { recursive: true, force: true })
})

const timeline = async () => (await call(`${gw.url}/v1/timeline?limit=1000`, { token })).json.items as Array<any>

describe("gateway views and denied paths", () => {
  it("refuses provider events claiming .git or .forkjoin paths and never shows the secret", async () => {
    const applied = await call(`${gw.url}/v1/apply`, { token, body: { patch: patchOf("*** Update File: a.txt", "@@", "-one", "+two"), turn: "t1" } })
    expect(applied.status).toBe(200)
    const events = [
      { format: "codex-turn-diff", text: "--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-[core]\n+[credential]\n" },
      { format: "claude-tool-event", text: JSON.stringify({ tool_name: "Write", tool_input: { file_path: "sub/.forkjoin/x", content: "x\n" } }) },
      { format: "claude-tool-event", text: JSON.stringify({ tool_name: "Write", tool_input: { file_path: path.join(w.ws, ".git", "config"), content: "x\n" } }) }
    ]
    for (const e of events) {
      const r = await call(`${gw.url}/v1/provider-events`, { token, body: { ...e, turn: "p1" } })
      expect(r.status, r.text).toBe(400)
      expect(r.json.reason).toBe("path_denied_by_policy")
    }
    const items = await timeline()
    expect(items).toHaveLength(1)
    const outputs = [
      await call(`${gw.url}/v1/files?path=.git%2Fconfig`, { token }),
      await call(`${gw.url}/v1/files?path=g%2Fconfig`, { token }),
      await call(`${gw.url}/v1/files?path=a.txt`, { token }),
      await call(`${gw.url}/v1/diff?target=${encodeURIComponent(items[0].recordId)}`, { token }),
      await call(`${gw.url}/v1/timeline?limit=1000`, { token })
    ]
    for (const o of outputs) {
      expect(o.status, o.text).toBe(200)
      expect(o.text).not.toContain(SECRET)
    }
    expect(outputs[0]!.json.coverage.unrecordedChanges).toBeUndefined()
    expect(outputs[1]!.json.coverage.unrecordedChanges).toBeUndefined()
  })

  it("reports a file edited on disk in /v1/files and records nothing", async () => {
    const before = await timeline()
    fs.writeFileSync(path.join(w.ws, "a.txt"), "by hand\n")
    const page = await call(`${gw.url}/v1/files?path=a.txt`, { token })
    expect(page.status).toBe(200)
    expect(page.json.coverage.unrecordedChanges).toEqual([
      { path: "a.txt", recordedHash: before[before.length - 1].changes[0].after.hash, diskHash: expect.stringMatching(/^sha256:/) }
    ])
    expect(page.json.coverage.gaps).toBe(0)
    expect(await timeline()).toHaveLength(before.length)
  })
})
