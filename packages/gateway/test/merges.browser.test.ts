/**
 * The history page says how a join merged a path: a child's outcome lists its paths merged by
 * syntax tree, and a record's diff names the method and language, in a real browser (headless
 * Chromium, as `browser.test.ts`). The run is started before the page opens.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchBrowser } from "./browserSupport.ts"
import { BIN, buildCli, makeWorkspace, patchOf, type Started, start } from "./support.ts"

let browser: Browser
let gw: Started
let w: ReturnType<typeof makeWorkspace>
let runId: string

const addImport = (id: string, name: string) => ({
  id,
  mode: "transactional_write",
  writeScope: ["src"],
  actions: [{ apply_patch: { patch: patchOf("*** Update File: src/app.ts", "@@", " import { a } from \"./a\"", `+import { ${name} } from "./${name}"`) } }, { finish: {} }]
})

beforeAll(async () => {
  buildCli()
  w = makeWorkspace({ "src/app.ts": "import { a } from \"./a\"\n\nexport const x = a\n" })
  const planFile = path.join(w.dir, "plan.json")
  fs.writeFileSync(planFile, JSON.stringify({ schemaVersion: 1, tasks: [addImport("one", "b"), addImport("two", "c")] }))
  const run = spawnSync(process.execPath, [BIN, "run", planFile, "--workspace", w.ws, "--json"], {
    env: { ...process.env, NO_COLOR: "1", FORKJOIN_AUTONOMY: "bold" },
    encoding: "utf8"
  })
  expect(run.status, run.stderr).toBe(0)
  runId = JSON.parse(run.stdout).runId
  gw = await start({ root: w.ws, pollMs: 100, loginThread: "cli" })
  browser = await launchBrowser()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await gw?.stop()
  fs.rmSync(w.dir, { recursive: true, force: true })
})

describe("the history page and merge methods", () => {
  it("shows a path merged by syntax tree on the child's outcome and on its record's diff", async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } })
    const errors: Array<string> = []
    page.on("pageerror", (e) => errors.push(e.message))
    await page.goto(gw.loginUrl!)
    const outcome = page.locator(`[data-testid=run][data-run="${runId}"] [data-testid=outcome][data-child=two]`)
    await expect.poll(() => outcome.getByTestId("outcome-merge").allTextContents(), { timeout: 10_000 }).toEqual([
      "src/app.ts merged (structured, typescript)"
    ])
    const record = page.getByTestId("record").filter({ has: page.getByTestId("record-thread").filter({ hasText: `${runId}/two` }) })
    await expect.poll(() => record.count(), { timeout: 10_000 }).toBe(1)
    await record.click()
    await expect.poll(() => page.getByTestId("diff-merge").allTextContents()).toEqual(["merged (structured, typescript)"])
    expect(errors).toEqual([])
    await page.close()
  })
})
