/**
 * The verification command runs in a process group of its own: a background process it leaves
 * holding its output pipes neither stalls the join nor turns a passing command into a timeout,
 * and at the time limit the whole group is killed. Each holder announces itself through FIFOs
 * the test reads (`test/support/verifyHolder.ts`), so every wait is on an event (the command's
 * outcome, the holder's end of file), never on a clock.
 */
import { afterEach, describe, expect, it } from "vitest"
import type { VerifyCommand } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { endHolders, holderCase } from "../../../test/support/verifyHolder.ts"
import * as Verify from "../src/Verify.ts"

const dirs: Array<string> = []
afterEach(() => {
  endHolders()
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

/** `sh -c script` with `args` as `$0`, `$1`, … */
const sh = (script: string, ...args: ReadonlyArray<string>): VerifyCommand["command"] => ["sh", "-c", script, ...args]

describe("Verify.run", () => {
  it("a command that exits 0 and leaves a background process holding its output passes, and that process is ended", async () => {
    const c = holderCase()
    const log = path.join(c.dir, "verify.log")
    // sh starts the holder, waits until it holds `watch`, prints, and exits 0 while the holder lives on.
    const command = sh("\"$0\" \"$1\" \"$2\" \"$3\" \"$4\" & read line < \"$3\"; echo checked; exit 0", ...c.holder)
    const result = await Effect.runPromise(Verify.run({ command, timeoutMs: 600_000 }, c.dir, log))
    expect(result).toEqual({ ok: true, summary: "verification passed", log })
    expect(fs.readFileSync(log, "utf8")).toMatch(/checked\n# verification passed\n$/)
    await c.holderGone()
  })

  it("at the time limit the whole process group is killed, a grandchild holding the pipes too", async () => {
    const c = holderCase()
    const log = path.join(c.dir, "verify.log")
    // The direct child never ends by itself; the holder in the background holds the pipes.
    const command = sh("\"$0\" \"$1\" \"$2\" \"$3\" \"$4\" & exec \"$0\" -e \"setInterval(() => {}, 1e9)\"", ...c.holder)
    const result = await Effect.runPromise(Verify.run({ command, timeoutMs: 200 }, c.dir, log))
    expect(result).toEqual({ ok: false, summary: "verification timed out after 200 ms", log })
    await c.holderGone()
  })

  it("a command that exits non-zero fails with its exit code, and one that cannot start fails too", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fj-verify-exit-"))
    dirs.push(dir)
    const log = path.join(dir, "verify.log")
    const failed = await Effect.runPromise(Verify.run({ command: [process.execPath, "-e", "console.log('no'); process.exit(3)"], timeoutMs: 600_000 }, dir, log))
    expect(failed).toEqual({ ok: false, summary: "verification failed (exit 3)", log })
    expect(fs.readFileSync(log, "utf8")).toMatch(/no\n# verification failed \(exit 3\)\n$/)
    const missing = await Effect.runPromise(Verify.run({ command: [path.join(dir, "no-such-command")], timeoutMs: 600_000 }, dir, log))
    expect(missing.ok).toBe(false)
    expect(missing.summary).toMatch(/could not start \(spawn .*ENOENT\)/)
  })

  // A plan is untrusted: a command Node refuses to spawn at all is a failed verification, not a crash.
  it("a command with a NUL byte fails verification and writes its log", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fj-verify-nul-"))
    dirs.push(dir)
    const log = path.join(dir, "verify.log")
    const result = await Effect.runPromise(Verify.run({ command: [process.execPath, "-e", "0\u0000"], timeoutMs: 600_000 }, dir, log))
    expect(result.ok).toBe(false)
    expect(result.summary).toMatch(/could not start/)
    expect(fs.readFileSync(log, "utf8")).toMatch(/could not start/)
  })
})
