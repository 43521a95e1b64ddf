/** Stages 6–10 helpers: the stage-6 staleness check and the undo of a committed plan. */
import { RelativePath } from "@forkjoin/schema/Ids"
import type { Plan } from "@forkjoin/patch"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { stepsOf } from "../src/internal/commit.ts"
import { checkUnchanged, undoSteps } from "../src/internal/commitLocked.ts"
import { compileGlob, resolveTargets } from "../src/internal/resolve.ts"
import { makeWorkspace, removeSandboxes } from "./helpers.ts"

afterAll(removeSandboxes)

const b = (s: string): Uint8Array => new TextEncoder().encode(s)

const setup = () => {
  const ws = makeWorkspace({ "a.txt": "1\n" })
  fs.chmodSync(path.join(ws, "a.txt"), 0o700)
  const ctx = { root: fs.realpathSync(ws), allowedRoots: [], denied: [{ glob: ".git/**", re: compileGlob(".git/**", false) }], caseInsensitive: false }
  const targets = new Map(resolveTargets(ctx, ["a.txt", "n.txt"]).map((t) => [t.path, t]))
  return { ws, ctx, targets }
}

describe("checkUnchanged (stage 6)", () => {
  it("passes when every target is as planned", () => {
    const { ctx, targets } = setup()
    expect(checkUnchanged(ctx, ["a.txt", "n.txt"], targets)).toBeUndefined()
  })

  it("reports a file whose bytes changed, and a missing file that appeared", () => {
    const { ctx, targets, ws } = setup()
    fs.writeFileSync(path.join(ws, "a.txt"), "someone else\n")
    expect(checkUnchanged(ctx, ["a.txt", "n.txt"], targets)).toMatchObject({ code: "stale_file", stage: 6, paths: ["a.txt"] })
    fs.writeFileSync(path.join(ws, "a.txt"), "1\n")
    fs.writeFileSync(path.join(ws, "n.txt"), "new\n")
    expect(checkUnchanged(ctx, ["a.txt", "n.txt"], targets)).toMatchObject({ code: "stale_file", paths: ["n.txt"] })
  })
})

describe("undoSteps", () => {
  it("puts each path back to its original bytes and mode, or removes it", () => {
    const { targets } = setup()
    const plan: Plan = {
      files: [
        { kind: "update", path: RelativePath.make("a.txt"), before: b("1\n"), after: b("2\n") },
        { kind: "add", path: RelativePath.make("n.txt"), before: undefined, after: b("n\n") }
      ],
      summary: []
    }
    const undo = undoSteps(stepsOf(plan, targets))
    expect(undo.map((s) => [s.path, s.after === undefined ? undefined : new TextDecoder().decode(s.after), s.mode])).toEqual([
      ["a.txt", "1\n", 0o700],
      ["n.txt", undefined, undefined]
    ])
  })
})
