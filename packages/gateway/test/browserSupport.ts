/**
 * The page's browser tests share these: headless Chromium from Debian's `chromium` package
 * (driven by playwright-core) and screenshots, written under the OS temp dir and copied to
 * `.ci/artifacts/screenshots/`.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { expect } from "vitest"

const CHROMIUM = "/usr/bin/chromium"
const SHOTS = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-screenshots-"))
const ARTIFACTS = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../../../.ci/artifacts/screenshots")

/** Headless Chromium. */
export const launchBrowser = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] })

/** A full-page screenshot `name.png`, checked to hold an image. */
export const shot = async (page: Page, name: string): Promise<void> => {
  const file = path.join(SHOTS, `${name}.png`)
  await page.screenshot({ path: file, fullPage: true })
  fs.mkdirSync(ARTIFACTS, { recursive: true })
  fs.copyFileSync(file, path.join(ARTIFACTS, `${name}.png`))
  expect(fs.statSync(file).size).toBeGreaterThan(1000)
}
