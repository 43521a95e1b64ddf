/**
 * The page's browser tests share these: headless Chromium from Debian's `chromium` package
 * (driven by playwright-core), a gateway and a browser for the whole file, pages that collect
 * their script errors, a wait for what the page shows, and screenshots, written under the OS temp
 * dir and copied to `.ci/artifacts/screenshots/`.
 *
 * Nothing here has a deadline of its own: on a loaded machine a cold Chromium, a page load or a
 * live update takes as long as it takes, and vitest's test and hook timeouts are the hang guards.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { expect, TestRunner } from "vitest"
import { forTheFile, type Started, start, workspaceForTheFile } from "./support.ts"

const CHROMIUM = "/usr/bin/chromium"
const SHOTS = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-screenshots-"))
const ARTIFACTS = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../../../.ci/artifacts/screenshots")

/** Headless Chromium, however long it takes to start. */
export const launchBrowser = (): Promise<Browser> =>
  chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"], timeout: 0 })

/**
 * Polls `read` until the assertion chained on it holds, as `expect.poll` does, but for as long as
 * the running test may take (its timeout), not a second: the page is waited for, not timed.
 */
export const untilShown = <T>(read: () => Promise<T>) => {
  const test = TestRunner.getCurrentTest()
  if (test === undefined) throw new Error("untilShown waits inside a test")
  return expect.poll(read, { timeout: test.timeout, interval: 100 })
}

/** A page opened at `url` whose actions and navigations wait without a deadline; `errors` collects its uncaught script errors. */
export const openPage = async (browser: Browser, url: string): Promise<{ readonly page: Page; readonly errors: Array<string> }> => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } })
  page.setDefaultTimeout(0)
  const errors: Array<string> = []
  page.on("pageerror", (e) => errors.push(e.message))
  await page.goto(url)
  return { page, errors }
}

/** The workspace a browser test's page is served from: `dir` (removed after the file) holds `ws`. */
export interface PageWorkspace {
  readonly dir: string
  readonly ws: string
}

/**
 * For the file's tests: `prepare()` (the workspace and whatever the tests start from), a gateway
 * on its workspace whose one-time login is for thread `cli`, and a browser; after them, all closed
 * and the folder removed.
 */
export const pageFixture = <W extends PageWorkspace>(prepare: () => W | Promise<W>) => {
  const w = workspaceForTheFile(prepare)
  const gw = forTheFile(() => start({ root: w().ws, pollMs: 100, loginThread: "cli" }), (g) => g.stop())
  const browser = forTheFile(launchBrowser, (b) => b.close())
  return {
    get w(): W {
      return w()
    },
    get gw(): Started {
      return gw()
    },
    /** A page at `url` (by default the gateway's one-time login address). */
    open: (url?: string) => openPage(browser(), url ?? gw().loginUrl ?? "")
  }
}

/** A full-page screenshot `name.png`, checked to hold an image. */
export const shot = async (page: Page, name: string): Promise<void> => {
  const file = path.join(SHOTS, `${name}.png`)
  await page.screenshot({ path: file, fullPage: true })
  fs.mkdirSync(ARTIFACTS, { recursive: true })
  fs.copyFileSync(file, path.join(ARTIFACTS, `${name}.png`))
  expect(fs.statSync(file).size).toBeGreaterThan(1000)
}
