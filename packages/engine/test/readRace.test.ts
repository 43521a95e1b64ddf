/**
 * Reads racing a swap (the attacker is another process): while a child process swaps a
 * workspace path between a regular in-workspace file and a symlink to a secret outside the
 * workspace (or an intermediate directory between a real folder and a link to an outside
 * folder) as fast as it can, `Engine.read` (the read path of MCP `read_file` and the
 * gateway's view grants) never returns the secret: each read is the in-workspace content, or
 * a refusal with a stable code.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import type { FileState } from "@forkjoin/patch"
import { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { startSwapper, stopSwapper } from "../../../test/support/swapper.ts"
import { makeWorkspace, removeSandboxes, withEngine } from "./helpers.ts"

afterAll(removeSandboxes)

const READS = 10_000
const SECRET = "TOP-SECRET-outside-the-workspace\n"
const INSIDE = "inside the workspace\n"
// Codes a read racing the swapper may end with; anything else is a bug.
const REFUSALS = new Set(["path_outside_roots", "stale_file", "path_invalid"])

// The swapper: replaces the path by rename (atomic) as fast as it can until killed.
// `file` mode: a hard link of one in-workspace file <-> a symlink to the secret.
// `dir` mode: the real folder <-> a symlink to an outside folder holding the secret's name.
const SWAPPER = `
const fs = require("node:fs")
const path = require("node:path")
const [mode, ws, outside] = process.argv.slice(2)
let n = 0
const tmp = () => path.join(ws, "store", "tmp-" + (n++ % 2))
const swapFile = () => {
  const a = tmp()
  fs.linkSync(path.join(ws, "store", "f.txt"), a)
  fs.renameSync(a, path.join(ws, "f.txt"))
  const b = tmp()
  fs.symlinkSync(path.join(outside, "secret.txt"), b)
  fs.renameSync(b, path.join(ws, "f.txt"))
}
// A folder cannot be renamed over a link, so each state is held a few calls long: otherwise
// the folder would be missing most of the time.
const hold = (p) => { for (let k = 0; k < 4; k++) fs.lstatSync(p) }
const swapDir = () => {
  const d = path.join(ws, "d")
  fs.renameSync(d, path.join(ws, "store", "d"))
  const b = tmp()
  fs.symlinkSync(path.join(outside, "dir"), b)
  fs.renameSync(b, d)
  hold(d)
  fs.unlinkSync(d)
  fs.renameSync(path.join(ws, "store", "d"), d)
  hold(d)
}
const step = mode === "file" ? swapFile : swapDir
step()
process.stdout.write("ready\\n")
for (;;) step()
`

const secretBytes = Buffer.from(SECRET)

interface Tally {
  leaks: number
  inside: number
  refused: number
  other: number
  unexpected: Array<string>
}

const tally = (): Tally => ({ leaks: 0, inside: 0, refused: 0, other: 0, unexpected: [] })

const count = (t: Tally, exit: Exit.Exit<ReadonlyMap<string, FileState>, EngineError>, p: string): void => {
  if (Exit.isSuccess(exit)) {
    const state = exit.value.get(p)
    if (state?._tag === "File") {
      const bytes = Buffer.from(state.bytes)
      if (bytes.includes(secretBytes)) t.leaks++
      else if (bytes.toString() === INSIDE) t.inside++
      else t.unexpected.push(`content ${JSON.stringify(bytes.toString().slice(0, 40))}`)
    } else {
      // A link seen as a link, the folder missing mid-swap: no content, nothing leaked.
      t.other++
    }
    return
  }
  const error = exit.cause.reasons.find((r) => r._tag === "Fail")
  if (error?._tag === "Fail" && error.error instanceof EngineError && REFUSALS.has(error.error.code)) t.refused++
  else t.unexpected.push(String(exit.cause))
}

/** Reads `p` READS times through `Engine.read` while the swapper runs. */
const race = async (mode: "file" | "dir", p: string): Promise<Tally> => {
  const ws = fs.realpathSync(makeWorkspace({ "store/f.txt": INSIDE, "d/f.txt": INSIDE }))
  const outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "fj-outside-")))
  try {
    fs.writeFileSync(path.join(outside, "secret.txt"), SECRET)
    fs.mkdirSync(path.join(outside, "dir"))
    fs.writeFileSync(path.join(outside, "dir", "f.txt"), SECRET)
    const t = tally()
    const { exit } = await withEngine(ws, (engine) =>
      Effect.gen(function*() {
        const child = yield* Effect.promise(() => startSwapper(SWAPPER, outside, [mode, ws, outside]))
        try {
          for (let i = 0; i < READS; i++) count(t, yield* Effect.exit(engine.read([p])), p)
        } finally {
          yield* Effect.promise(() => stopSwapper(child))
        }
      }))
    assert.isTrue(Exit.isSuccess(exit), String(exit))
    return t
  } finally {
    fs.rmSync(outside, { recursive: true, force: true })
  }
}

describe("Engine.read racing a swap by another process", () => {
  it("never returns the secret when the file itself is swapped with a link out", { timeout: 120_000 }, async () => {
    const t = await race("file", "f.txt")
    assert.deepStrictEqual(t.unexpected, [])
    assert.strictEqual(t.leaks, 0, `leaked the outside secret ${t.leaks} times in ${READS} reads (${JSON.stringify(t)})`)
    assert.strictEqual(t.inside + t.refused + t.other, READS)
    assert.isAbove(t.inside, 0)
  })

  it("never returns the secret when a folder on the path is swapped with a link out", { timeout: 120_000 }, async () => {
    const t = await race("dir", "d/f.txt")
    assert.deepStrictEqual(t.unexpected, [])
    assert.strictEqual(t.leaks, 0, `leaked the outside secret ${t.leaks} times in ${READS} reads (${JSON.stringify(t)})`)
    assert.strictEqual(t.inside + t.refused + t.other, READS)
    assert.isAbove(t.inside, 0)
  })
})
