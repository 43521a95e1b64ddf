/**
 * The page's agent sessions in a real browser (headless Chromium from Debian's `chromium`
 * package, driven by playwright-core): after `forkjoin mcp` sessions in the login thread and in
 * another thread (the built CLI, the official MCP client), the page lists only the login
 * thread's session with its id, kind, provider/model, start, status and the runs it started;
 * clicking it shows its thread, client, tool calls and the run with its children; a new session
 * appears live, with no reload, once it writes. Screenshots go
 * to a folder under the OS temp dir and are copied to `.ci/artifacts/screenshots/`.
 */
import { describe, expect, it } from "vitest"
import { mcpSession } from "../../cli/test/mcpClient.ts"
import { pageFixture, shot, untilShown } from "./browserSupport.ts"
import { buildCli, makeWorkspace } from "./support.ts"

let runId: string

const fx = pageFixture(async () => {
  buildCli()
  const w = makeWorkspace({ "a.txt": "one\n" })
  // A configured model that is never called: the sessions record it.
  const model = { args: ["--model", "page-model"], env: { OPENAI_BASE_URL: "http://127.0.0.1:9/v1" }, version: "0.9.1" }
  runId = (await mcpSession(w.ws, "cli", { ...model, startRun: true }))!
  await mcpSession(w.ws, "other", model)
  return w
})

describe("the page's agent sessions", () => {
  it("lists the login thread's sessions only and shows one in full", async () => {
    const { page, errors } = await fx.open()
    await untilShown(() => page.getByTestId("who").textContent()).toBe("thread cli")
    const item = page.getByTestId("agent")
    await untilShown(() => item.count()).toBe(1)
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
    await untilShown(() => detail.getByTestId("agent-title").textContent()).toBe(`mcp ${agentId}: ended`)
    expect(await detail.getByTestId("agent-facts").textContent()).toBe("thread cli · openai/page-model · client: client-cli 0.9.1")
    expect(await detail.getByTestId("agent-usage").textContent()).toMatch(/^2 step\(s\), 0 model call\(s\), 0 input \+ 0 output tokens; started \S+, ended \S+$/)
    const calls = await detail.getByTestId("agent-call").allTextContents()
    expect(calls.map((c) => c.split(/ok|failed/)[0])).toEqual(["apply_patch", "run_subagents"])
    expect(await detail.locator(`[data-testid=agent-run][data-run="${runId}"]`).textContent()).toBe(`${runId} applied docs applied`)
    await shot(page, "11-agent-detail")

    // Live: a new session of the login thread appears when its first record arrives, without a reload.
    await untilShown(() => page.getByTestId("live").textContent()).toBe("live")
    await mcpSession(fx.w.ws, "cli", { version: "0.9.2", file: "later.md" })
    await untilShown(() => item.count()).toBe(2)
    expect(errors).toEqual([])
    await page.close()
  })
})
