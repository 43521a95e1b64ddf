/**
 * The verification command runs in a process group of its own: a background process it leaves
 * holding its output pipes neither stalls the join nor turns a passing command into a timeout,
 * and at the time limit the whole group is killed. Each holder announces itself through FIFOs
 * the test reads, so every wait is on an event (the command's outcome, the holder's end of
 * file), never on a clock.
 */
import { afterEach, describe, expect, it } from "vitest"
import * as Effect from "effect/Effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Verify from "../src/Verify.ts"

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) {
    // A holder a failing run left behind (before the group kill existed) is ended here.
    const pidFile = path.join(dir, "holder.pid")
    if (fs.existsSync(pidFile)) {
      try {
        process.kill(Number(fs.readFileSync(pidFile, "utf8")), "SIGKILL")
      } catch {
        // Already gone.
      }
    }
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

/**
 * A scratch folder with a holder script and two FIFOs: the holder keeps `watch` open for
 * writing while it lives (it inherits the command's output pipes as well), and writes a line to
 * `ready` once it holds `watch`.
 */
const holderCase = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fj-verify-group-"))
  dirs.push(dir)
  const [watch, ready, pidFile, script] = ["watch", "ready", "holder.pid", "holder.js"].map((f) => path.join(dir, f)) as [string, string, string, string]
  execFileSync("mkfifo", [watch, ready])
  fs.writeFileSync(script, [
    "const fs = require('fs')",
    "const [watch, ready, pidFile] = process.argv.slice(2)",
    "fs.writeFileSync(pidFile, String(process.pid))",
    "fs.openSync(watch, 'w')",
    "fs.writeFileSync(ready, 'up\\n')",
    "setInterval(() => {}, 1e9)"
  ].join("\n"))
  // Ends when every writer of `watch` is gone: opened now, before the holder blocks on it.
  const gone = new Promise<void>((resolve, reject) => {
    const reader = fs.createReadStream(watch)
    reader.on("data", () => {})
    reader.on("end", () => resolve())
    reader.on("error", reject)
  })
  /**
   * Resolves once the holder has ended (or never started): our own writer, opened and closed at
   * once, lets a reader still waiting for one reach end of file. ENXIO: the reader has already
   * reached it and closed.
   */
  const holderGone = () => {
    try {
      fs.closeSync(fs.openSync(watch, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK))
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENXIO") throw e
    }
    return gone
  }
  return { dir, holder: [process.execPath, script, watch, ready, pidFile], holderGone }
}

describe("Verify.run", () => {
  it("a command that exits 0 and leaves a background process holding its output passes, and that process is ended", async () => {
    const c = holderCase()
    const log = path.join(c.dir, "verify.log")
    // sh starts the holder, waits until it holds `watch`, prints, and exits 0 while the holder lives on.
    const command = ["sh", "-c", "\"$0\" \"$1\" \"$2\" \"$3\" \"$4\" & read line < \"$3\"; echo checked; exit 0", ...c.holder]
    const result = await Effect.runPromise(Verify.run({ command: [command[0]!, ...command.slice(1)], timeoutMs: 600_000 }, c.dir, log))
    expect(result).toEqual({ ok: true, summary: "verification passed", log })
    expect(fs.readFileSync(log, "utf8")).toMatch(/checked\n# verification passed\n$/)
    await c.holderGone()
  })

  it("at the time limit the whole process group is killed, a grandchild holding the pipes too", async () => {
    const c = holderCase()
    const log = path.join(c.dir, "verify.log")
    // The direct child never ends by itself; the holder in the background holds the pipes.
    const command = ["sh", "-c", "\"$0\" \"$1\" \"$2\" \"$3\" \"$4\" & exec \"$0\" -e \"setInterval(() => {}, 1e9)\"", ...c.holder]
    const result = await Effect.runPromise(Verify.run({ command: [command[0]!, ...command.slice(1)], timeoutMs: 200 }, c.dir, log))
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
})
