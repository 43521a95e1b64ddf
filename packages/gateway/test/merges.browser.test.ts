/**
 * The history page says how a join merged a path: a child's outcome lists its paths merged by
 * syntax tree, and a record's diff names the method and language, in a real browser (headless
 * Chromium, as `browser.test.ts`). The run is started before the page opens.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { pageFixture, untilShown } from "./browserSupport.ts"
import { buildCli, makeWorkspace, patchOf, runCli } from "./support.ts"

let runId: string

const addImport = (id: string, name: string) => ({
  id,
  mode: "transactional_write",
  writeScope: ["src"],
  actions: [{ apply_patch: { patch: patchOf("*** Update File: src/app.ts", "@@", " import { a } from \"./a\"", `+import { ${name} } from "./${name}"`) } }, { finish: {} }]
})

const fx = pageFixture(() => {
  buildCli()
  const w = makeWorkspace({ "src/app.ts": "import { a } from \"./a\"\n\nexport const x = a\n" })
  const planFile = path.join(w.dir, "plan.json")
  fs.writeFileSync(planFile, JSON.stringify({ schemaVersion: 1, tasks: [addImport("one", "b"), addImport("two", "c")] }))
  const run = runCli(["run", planFile, "--workspace", w.ws, "--json"])
  expect(run.status, run.stderr).toBe(0)
  expect(run.stdout, run.stderr).not.toBe("")
  runId = JSON.parse(run.stdout).runId
  return w
})

describe("the history page and merge methods", () => {
  it("shows a path merged by syntax tree on the child's outcome and on its record's diff", async () => {
    const { page, errors } = await fx.open()
    const outcome = page.locator(`[data-testid=run][data-run="${runId}"] [data-testid=outcome][data-child=two]`)
    await untilShown(() => outcome.getByTestId("outcome-merge").allTextContents()).toEqual(["src/app.ts merged (structured, typescript)"])
    const record = page.getByTestId("record").filter({ has: page.getByTestId("record-thread").filter({ hasText: `${runId}/two` }) })
    await untilShown(() => record.count()).toBe(1)
    await record.click()
    await untilShown(() => page.getByTestId("diff-merge").allTextContents()).toEqual(["merged (structured, typescript)"])
    expect(errors).toEqual([])
    await page.close()
  })
})
