/**
 * `list_dir` racing a swap (the attacker is another process): while a child process swaps the
 * workspace folder `d` between a real folder, a symlink to a folder outside the workspace and
 * a symlink to the workspace's `.git`, as fast as it can, a listing of `d` (the overlay's and
 * a direct session's) never names what lies outside or in `.git`: each listing is the real
 * folder's, or a refusal with a stable code.
 */
import { Engine } from "@forkjoin/engine/Engine"
import { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import * as DirectView from "../src/internal/directView.ts"
import * as Overlay from "../src/Overlay.ts"
import * as WriteScope from "../src/WriteScope.ts"
import { startSwapper, stopSwapper } from "../../../test/support/swapper.ts"
import { makeWorkspace, removeSandboxes, run } from "./helpers.ts"

afterAll(removeSandboxes)

const LISTINGS = 4_000
const INSIDE_NAME = "inside.txt"
const OUTSIDE_NAME = "OUTSIDE-SECRET-NAME"
const GIT_NAME = "GIT-INTERNAL-NAME"
// Codes a listing racing the swapper may end with; anything else is a bug.
const REFUSALS = new Set(["path_outside_roots", "path_denied_by_policy", "stale_file", "path_invalid", "target_missing", "unsupported_file_type"])

// The swapper: `d` is the real folder, then a link out, then the real folder, then a link to
// `.git`, and so on until killed. A folder cannot be renamed over a link, so each state is
// held a few calls long: otherwise the folder would be missing most of the time.
const SWAPPER = `
const fs = require("node:fs")
const path = require("node:path")
const [ws, outside] = process.argv.slice(2)
const d = path.join(ws, "d")
const parked = path.join(ws, "store", "d")
const hold = () => { for (let k = 0; k < 4; k++) fs.lstatSync(d) }
const linkTo = (target) => {
  fs.renameSync(d, parked)
  fs.symlinkSync(target, path.join(ws, "store", "link"))
  fs.renameSync(path.join(ws, "store", "link"), d)
  hold()
  fs.unlinkSync(d)
  fs.renameSync(parked, d)
  hold()
}
const step = () => { linkTo(path.join(outside, "dir")); linkTo(path.join(ws, ".git")) }
step()
process.stdout.write("ready\\n")
for (;;) step()
`

interface Tally {
  leaks: number
  inside: number
  refused: number
  unexpected: Array<string>
}

const count = (t: Tally, exit: Exit.Exit<ReadonlyArray<Overlay.DirEntry>, unknown>): void => {
  if (Exit.isSuccess(exit)) {
    const names = exit.value.map((e) => e.name)
    if (names.includes(OUTSIDE_NAME) || names.includes(GIT_NAME)) t.leaks++
    else if (names.length === 1 && names[0] === INSIDE_NAME) t.inside++
    else t.unexpected.push(`listing ${JSON.stringify(names)}`)
    return
  }
  const error = exit.cause.reasons.find((r) => r._tag === "Fail")
  if (error?._tag === "Fail" && error.error instanceof EngineError && REFUSALS.has(error.error.code)) t.refused++
  else t.unexpected.push(String(exit.cause))
}

type Lister = Effect.Effect<ReadonlyArray<Overlay.DirEntry>, unknown, Engine>

/** Lists `d` LISTINGS times with `list` while the swapper runs. */
const race = async (list: Lister): Promise<Tally> => {
  const ws = fs.realpathSync(makeWorkspace({ [`d/${INSIDE_NAME}`]: "in\n", "store/.keep": "", [`.git/${GIT_NAME}`]: "[core]\n" }))
  const outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "fj-outside-")))
  try {
    fs.mkdirSync(path.join(outside, "dir"))
    fs.writeFileSync(path.join(outside, "dir", OUTSIDE_NAME), "secret\n")
    const t: Tally = { leaks: 0, inside: 0, refused: 0, unexpected: [] }
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const child = yield* Effect.promise(() => startSwapper(SWAPPER, outside, [ws, outside]))
        try {
          for (let i = 0; i < LISTINGS; i++) count(t, yield* Effect.exit(list))
        } finally {
          yield* Effect.promise(() => stopSwapper(child))
        }
      })
    )
    assert.isTrue(Exit.isSuccess(exit), String(exit))
    return t
  } finally {
    fs.rmSync(outside, { recursive: true, force: true })
  }
}

const check = (t: Tally): void => {
  assert.strictEqual(t.leaks, 0, `listed outside or .git names ${t.leaks} times in ${LISTINGS} listings (${JSON.stringify(t)})`)
  assert.deepStrictEqual(t.unexpected.slice(0, 5), [])
  assert.strictEqual(t.inside + t.refused, LISTINGS)
  assert.isAbove(t.inside, 0)
}

describe("list_dir racing a swap of the listed folder by another process", () => {
  it("the overlay never lists a folder outside the workspace or in .git", { timeout: 180_000 }, async () => {
    // A fresh overlay each time: a listing is cached once read.
    const list = Effect.flatMap(Overlay.make({ writeScope: WriteScope.makeUnsafe(["d"]) }), (o) => o.listDir("d"))
    check(await race(list))
  })

  it("a direct session never lists a folder outside the workspace or in .git", { timeout: 180_000 }, async () => {
    const list = Effect.gen(function*() {
      const engine = yield* Engine
      return (yield* DirectView.listDir(engine, undefined, "d")).entries
    })
    check(await race(list))
  })
})

describe("list_dir and the default deny predicate", () => {
  it("never lists .git or .forkjoin, at any depth and in any letter case, even under a policy of other globs", async () => {
    const ws = makeWorkspace({ ".git/config": "[core]\n", "a/.GIT/config": "[core]\n", "a/.forkjoin/k": "k\n", "a/f.txt": "f\n", "private/p.txt": "p\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const o = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["a"]), deniedGlobs: ["private/**"] })
        const engine = yield* Engine
        return {
          root: (yield* o.listDir("")).map((e) => e.name),
          a: (yield* o.listDir("a")).map((e) => e.name),
          directA: (yield* DirectView.listDir(engine, undefined, "a")).entries.map((e) => e.name)
        }
      })
    )
    assert.isTrue(Exit.isSuccess(exit), String(exit))
    assert.deepStrictEqual(Exit.isSuccess(exit) ? exit.value : undefined, { root: ["a"], a: ["f.txt"], directA: ["f.txt"] })
  })
})
