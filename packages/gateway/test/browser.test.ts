/**
 * The history page in a real browser (headless Chromium from Debian's `chromium` package,
 * driven by playwright-core): log in with the one-time code of `--open-url`, watch a
 * `forkjoin run` join appear live (no reload), read a record's diff and a file's history across
 * child threads, resolve the held conflict by clicking, and see that a child's token shows only
 * that child. Screenshots go to a folder under the OS temp dir and are copied to
 * `.ci/artifacts/screenshots/`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { pageFixture, shot, untilShown } from "./browserSupport.ts"
import { buildCli, conflictCase, runCliAsync, tokenFor } from "./support.ts"

const fx = pageFixture(() => {
  buildCli()
  return conflictCase()
})

describe("the history page", () => {
  it("follows a forkjoin run live, shows diffs and file history, and resolves the conflict by clicking", async () => {
    const { page, errors } = await fx.open()
    await untilShown(() => page.getByTestId("who").textContent()).toBe("thread cli")
    await untilShown(() => page.getByTestId("live").textContent()).toBe("live")
    // The code is spent and gone from the address bar.
    expect(new URL(page.url()).hash).toBe("")
    await shot(page, "01-logged-in")

    // In another process, as a person would start it while the page is open.
    const run = await runCliAsync(["run", fx.w.planFile, "--workspace", fx.w.ws, "--json"], {})
    expect(run.status, run.stderr).toBe(1)
    const runId = JSON.parse(run.stdout).runId as string
    // Live: the run, its outcomes and the held conflict arrive through the event stream.
    const runItem = page.locator(`[data-testid=run][data-run="${runId}"]`)
    await untilShown(() => runItem.getByTestId("run-status").textContent()).toBe("blocked")
    await untilShown(() => runItem.locator("[data-testid=outcome]").allTextContents()).toEqual([
      "first applied",
      "second conflicted_unresolved"
    ])
    const conflict = runItem.getByTestId("conflict")
    await untilShown(() => conflict.textContent()).toContain("<<<<<<< workspace")
    expect(await conflict.textContent()).toContain(">>>>>>> second")
    await untilShown(() => page.getByTestId("record").count()).toBeGreaterThan(0)
    await shot(page, "02-run-blocked-live")

    await page.getByTestId("record").first().click()
    await untilShown(() => page.getByTestId("diff-text").first().textContent()).toContain("+F1-first")
    await page.getByTestId("file-input").fill("m/f.txt")
    await page.getByTestId("file-submit").click()
    await untilShown(() => page.getByTestId("file-item").count()).toBeGreaterThan(0)
    expect(await page.getByTestId("file-item").first().textContent()).toContain(`${runId}/first`)
    await shot(page, "03-diff-and-file-history")

    await conflict.getByTestId("resolve-apply").click()
    await untilShown(() => runItem.getByTestId("run-status").textContent()).toBe("applied")
    await untilShown(() => runItem.getByTestId("resolve-apply").count()).toBe(0)
    expect(fs.readFileSync(path.join(fx.w.ws, "m/f.txt"), "utf8")).toContain("F1-second\n")
    expect(fs.readFileSync(path.join(fx.w.ws, "m/other.txt"), "utf8")).toBe("O1\n")
    await shot(page, "04-conflict-resolved")
    expect(errors).toEqual([])
    await page.close()
  })

  it("with a child's token, the page shows that child's thread and nothing else", async () => {
    const { page } = await fx.open(fx.gw.url)
    await untilShown(() => page.getByTestId("login").isVisible()).toBe(true)
    const first = await fetch(`${fx.gw.url}/v1/runs`, { headers: { authorization: `Bearer ${(await tokenFor(fx.w.db, "cli")).token}` } })
    const runId = ((await first.json()) as { runs: Array<{ runId: string }> }).runs[0]!.runId
    const childToken = (await tokenFor(fx.w.db, `${runId}/first`)).token
    await page.getByTestId("token-input").fill(childToken)
    await page.getByTestId("token-submit").click()
    await untilShown(() => page.getByTestId("who").textContent()).toBe(`thread ${runId}/first`)
    await untilShown(() => page.getByTestId("record").count()).toBeGreaterThan(0)
    const threads = await page.getByTestId("record-thread").allTextContents()
    expect(new Set(threads)).toEqual(new Set([`${runId}/first`]))
    expect(await page.getByTestId("run").count()).toBe(0)
    await shot(page, "05-child-token")
    // A wrong token is refused on the page, not silently.
    await page.evaluate(() => sessionStorage.setItem("forkjoin.token", "fjt_0000000000000000_" + "A".repeat(43)))
    await page.reload()
    await untilShown(() => page.getByTestId("login").isVisible()).toBe(true)
    await page.close()
  })
})
