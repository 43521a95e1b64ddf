/**
 * The page's agent sessions in a real browser (headless Chromium from Debian's `chromium`
 * package, driven by playwright-core): after `forkjoin mcp` sessions in the login thread and in
 * another thread (the built CLI, the official MCP client), the page lists only the login
 * thread's session with its id, kind, provider/model, start, status and the runs it started;
 * clicking it shows its thread, client, tool calls and the run with its children. Screenshots go
 * to a folder under the OS temp dir and are copied to `.ci/artifacts/screenshots/`.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connectMcp, observationOf } from "../../cli/test/mcpClient.ts"
import { buildCli, makeWorkspace, patchOf, type Started, start } from "./support.ts"

const CHROMIUM = "/usr/bin/chromium"
const SHOTS = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-screenshots-"))
const ARTIFACTS = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../../../.ci/artifacts/screenshots")

let browser: Browser
let gw: Started
let w: ReturnType<typeof makeWorkspace>
let runId: string

const shot = async (page: Page, name: string) => {
  const file = path.join(SHOTS, `${name}.png`)
  await page.screenshot({ path: file, fullPage: true })
  fs.mkdirSync(ARTIFACTS, { recursive: true })
  fs.copyFileSync(file, path.join(ARTIFACTS, `${name}.png`))
  expect(fs.statSync(file).size).toBeGreaterThan(1000)
}

/** One `forkjoin mcp` session in `thread` with a configured (never called) model; in cli it also starts a run. */
const session = async (thread: string) => {
  const client = await connectMcp(w.ws, ["--thread", thread, "--model", "page-model"], { name: `client-${thread}`, version: "0.9.1" }, {
    OPENAI_BASE_URL: "http://127.0.0.1:9/v1"
  })
  try {
    expect((await client.callTool({ name: "apply_patch", arguments: { patch: patchOf(`*** Add File: ${thread}.md`, "+x") } })).isError).toBeFalsy()
    if (thread === "cli") {
      const ran = await client.callTool({
        name: "run_subagents",
        arguments: { tasks: [{ id: "docs", mode: "transactional_write", writeScope: ["docs"], actions: [{ apply_patch: { patch: patchOf("*** Add File: docs/a.md", "+a") } }, { finish: {} }] }] }
      })
      runId = observationOf(ran).data.runId
    }
  } finally {
    await client.close()
  }
}

beforeAll(async () => {
  buildCli()
  w = makeWorkspace({ "a.txt": "one\n" })
  await session("cli")
  await session("other")
  gw = await start({ root: w.ws, pollMs: 100, loginThread: "cli" })
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await gw?.stop()
  fs.rmSync(w.dir, { recursive: true, force: true })
})

describe("the page's agent sessions", () => {
  it("lists the login thread's sessions only and shows one in full", async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } })
    const errors: Array<string> = []
    page.on("pageerror", (e) => errors.push(e.message))
    await page.goto(gw.loginUrl!)
    // Waits for the page itself (a cold browser on a loaded machine takes a while), not a deadline on it.
    await expect.poll(() => page.getByTestId("who").textContent(), { timeout: 30_000 }).toBe("thread cli")
    const item = page.getByTestId("agent")
    await expect.poll(() => item.count(), { timeout: 30_000 }).toBe(1)
    const agentId = (await item.getByTestId("agent-id").textContent())!
    expect(agentId).toMatch(/^mcp-/)
    expect(await item.getByTestId("agent-kind").textContent()).toBe("mcp")
    expect(await item.getByTestId("agent-model").textContent()).toBe("openai/page-model")
    expect(await item.getByTestId("agent-status").textContent()).toBe("ended")
    expect(await item.getByTestId("agent-started").textContent()).toMatch(/^started \d{4}-\d\d-\d\dT/)
    expect(await item.getByTestId("agent-runs").textContent()).toBe("1 run(s) started")
    expect(await page.getByTestId("agents").textContent()).not.toContain("client-other")
    await shot(page, "10-agents-list")

    await item.click()
    const detail = page.getByTestId("agent-detail")
    await expect.poll(() => detail.getByTestId("agent-title").textContent(), { timeout: 30_000 }).toBe(`mcp ${agentId}: ended`)
    expect(await detail.getByTestId("agent-facts").textContent()).toBe("thread cli · openai/page-model · client: client-cli 0.9.1")
    expect(await detail.getByTestId("agent-usage").textContent()).toMatch(/^2 step\(s\), 0 model call\(s\), 0 input \+ 0 output tokens; started \S+, ended \S+$/)
    const calls = await detail.getByTestId("agent-call").allTextContents()
    expect(calls.map((c) => c.split(/ok|failed/)[0])).toEqual(["apply_patch", "run_subagents"])
    expect(await detail.locator(`[data-testid=agent-run][data-run="${runId}"]`).textContent()).toBe(`${runId} applied docs applied`)
    await shot(page, "11-agent-detail")
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)
})
