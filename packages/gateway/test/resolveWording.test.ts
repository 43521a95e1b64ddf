/**
 * What the page says resolving a held conflict with the child does, as the real server serves
 * it: the child's side of the conflicting hunks onto the live file (the whole file only for a
 * conflict without hunks), never "the child's version" of the file.
 */
import * as fs from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, makeWorkspace, type Started, start } from "./support.ts"

let gw: Started
let w: ReturnType<typeof makeWorkspace>

beforeAll(async () => {
  w = makeWorkspace({ "a.txt": "one\n" })
  gw = await start({ root: w.ws, pollMs: 50 })
})

afterAll(async () => {
  await gw?.stop()
  fs.rmSync(w.dir, { recursive: true, force: true })
})

describe("the page's resolve button", () => {
  it("says it takes the child's side of the conflicting hunks onto the live file", async () => {
    const page = await call(`${gw.url}/`)
    expect(page.status).toBe(200)
    expect(page.text).not.toContain("child's version")
    expect(page.text).toContain("Take the child's side of the conflicting hunks")
    expect(page.text).toContain("a conflict without hunks (binary, deleted, added on both sides, moved and edited) takes the child's whole file")
  })
})
