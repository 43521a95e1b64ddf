/**
 * A background process for verification tests: `holder` is a command line (node, a script and
 * its three files) that writes its pid, keeps the FIFO `watch` open for writing while it lives
 * (and the output pipes it inherited), writes a line to the FIFO `ready` once it holds `watch`,
 * and never ends by itself. `held` resolves once it holds `watch`, `holderGone()` when it has
 * ended: events rather than a clock; `endHolders()` kills any still alive and removes their folders (for `afterEach`).
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const made: Array<string> = []

/** A scratch folder with a holder: its command line, its `ready` FIFO, and `holderGone`. */
export const holderCase = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fj-verify-holder-"))
  made.push(dir)
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
  // Opened now, before the holder blocks opening it: opens when the holder does, ends when every writer is gone.
  const reader = fs.createReadStream(watch)
  const held = new Promise<void>((resolve) => reader.on("open", () => resolve()))
  const gone = new Promise<void>((resolve, reject) => {
    reader.on("data", () => {})
    reader.on("end", () => resolve())
    reader.on("error", reject)
  })
  /**
   * Resolves once the holder has ended (or never started): our own writer, opened and closed at
   * once, lets a reader still waiting for a writer reach end of file. ENXIO: the reader has
   * already reached it and closed.
   */
  const holderGone = () => {
    try {
      fs.closeSync(fs.openSync(watch, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK))
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENXIO") throw e
    }
    return gone
  }
  return { dir, ready, holder: [process.execPath, script, watch, ready, pidFile] as const, held, holderGone }
}

/** Kills every holder still alive (a run that failed to end it) and removes the folders. */
export const endHolders = (): void => {
  for (const dir of made.splice(0)) {
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
}
