/**
 * The history page lists a held rollback's conflicts, in a real browser (headless Chromium, as
 * `browser.test.ts`): grouped by the transaction rolled back, each with its kind, path, status
 * and text, and the resolve buttons; resolving the last one from the page applies the whole
 * rollback (the file on disk, the record on the timeline, the conflicts shown resolved). A
 * rollback held by another thread is not shown. The rollbacks are held before the page opens.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { pageFixture, untilShown } from "./browserSupport.ts"
import { at, TEN } from "../../cli/test/rollbackHelpers.ts"
import { buildCli, makeWorkspace, patchOf, runCli } from "./support.ts"

let first: string
let foreign: string

const fx = pageFixture(() => {
  buildCli()
  const w = makeWorkspace({ "f.txt": TEN, "h.txt": TEN, "o.txt": TEN })
  const apply = (thread: string, ...body: ReadonlyArray<string>): string => {
    const file = path.join(w.dir, "patch.txt")
    fs.writeFileSync(file, patchOf(...body) + "\n")
    const r = runCli(["apply", file, "--workspace", w.ws, "--thread", thread, "--json"])
    expect(r.status, r.stderr).toBe(0)
    return JSON.parse(r.stdout).record.transactionId
  }
  // A patch of the page's thread on f.txt and h.txt, then later edits of the same lines: held on both.
  first = apply("cli", "*** Update File: f.txt", "@@", " 1", "-2", "+two", "*** Update File: h.txt", "@@", " 1", "-2", "+two")
  apply("cli", "*** Update File: f.txt", "@@", " 1", "-two", "+F", "*** Update File: h.txt", "@@", " 1", "-two", "+H", "@@", " 6", "-7", "+seven")
  // Another thread's held rollback, on o.txt.
  foreign = apply("other", "*** Update File: o.txt", "@@", " 1", "-2", "+two")
  apply("other", "*** Update File: o.txt", "@@", " 1", "-two", "+O")
  for (const [tx, thread] of [[first, "cli"], [foreign, "other"]] as const) {
    const held = runCli(["rollback", tx, "--workspace", w.ws, "--thread", thread, "--json"])
    expect(JSON.parse(held.stdout).error?.code, held.stdout + held.stderr).toBe("rollback_conflicted")
  }
  return w
})

describe("the history page and held rollbacks", () => {
  it("lists a held rollback's conflicts with kind, transaction, path and text; resolving the last applies the rollback", async () => {
    const { page, errors } = await fx.open()
    const held = page.locator(`[data-testid=rollback][data-transaction="${first}"]`)
    await untilShown(() => held.getByTestId("rollback-transaction").allTextContents()).toEqual([first])
    // Only the page's thread's: the other thread's held rollback is not listed.
    await untilShown(() => page.getByTestId("rollback").count()).toBe(1)
    const conflicts = held.getByTestId("rollback-conflict")
    expect(await conflicts.evaluateAll((cs) => cs.map((c) => c.getAttribute("data-conflict")))).toEqual([`rollback:${first}:f.txt`, `rollback:${first}:h.txt`])
    expect(await held.getByTestId("rollback-conflict-path").allTextContents()).toEqual(["f.txt", "h.txt"])
    expect(await held.getByTestId("rollback-conflict-kind").allTextContents()).toEqual(["rollback", "rollback"])
    expect(await held.getByTestId("rollback-open").textContent()).toBe("2 open")
    const f = conflicts.filter({ has: page.getByText("f.txt", { exact: true }) })
    expect(await f.locator("pre").textContent()).toContain("<<<<<<< workspace\nF\n")
    expect(await page.locator(`[data-conflict="rollback:${foreign}:o.txt"]`).count()).toBe(0)

    // The first resolution writes nothing; the last one applies the whole rollback.
    await f.getByTestId("resolve-discard").click()
    await untilShown(() => held.getByTestId("rollback-open").textContent()).toBe("1 open")
    expect(fs.readFileSync(path.join(fx.w.ws, "h.txt"), "utf8")).toBe(at(at(TEN, 2, "H"), 7, "seven"))
    await held.getByTestId("rollback-conflict").filter({ has: page.getByText("h.txt", { exact: true }) }).getByTestId("resolve-apply").click()
    await untilShown(() => held.getByTestId("rollback-open").textContent()).toBe("all resolved")
    expect(await held.getByTestId("rollback-conflict-status").allTextContents()).toEqual(["resolved", "resolved"])
    expect(await held.getByTestId("resolve-apply").count()).toBe(0)
    expect(fs.readFileSync(path.join(fx.w.ws, "h.txt"), "utf8")).toBe(at(TEN, 7, "seven"))
    expect(fs.readFileSync(path.join(fx.w.ws, "f.txt"), "utf8")).toBe(at(TEN, 2, "F"))
    // The rollback's record reaches the timeline.
    await untilShown(() => page.getByTestId("record").filter({ hasText: "h.txt" }).count()).toBe(3)
    expect(errors).toEqual([])
    await page.close()
  })
})
