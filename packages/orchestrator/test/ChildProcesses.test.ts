/**
 * `killChild` never signals a child whose spawn failed: Node's own `kill` would then signal pid
 * 0, the caller's whole process group (it killed whole CI runs). Each case runs in a detached
 * process of its own, so the hazard, shown by the bare case, stays inside that group.
 */
import { spawn } from "node:child_process"
import { afterAll, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import { bundle } from "../../../test/support/bundle.ts"

const entry = bundle("packages/orchestrator/test/fixtures/killFailedSpawn.ts")
afterAll(() => fs.rmSync(entry, { force: true }))

const runDetached = (mode: "guarded" | "bare") =>
  new Promise<{ readonly stdout: string; readonly code: number | null; readonly signal: NodeJS.Signals | null }>((resolve) => {
    const child = spawn(process.execPath, [entry, mode], { detached: true, stdio: ["ignore", "pipe", "inherit"] })
    let stdout = ""
    child.stdout.on("data", (b: Buffer) => (stdout += b.toString("utf8")))
    child.on("close", (code, signal) => resolve({ stdout, code, signal }))
  })

describe("killChild", () => {
  it("leaves the caller's process group alone when the child never started", async () => {
    expect(await runDetached("guarded")).toEqual({ stdout: "alive\n", code: 0, signal: null })
  })

  it("where a bare kill of the same child kills the caller's whole process group", async () => {
    expect(await runDetached("bare")).toMatchObject({ stdout: "", signal: "SIGKILL" })
  })
})
