/**
 * Property: random patches against random trees — with escaping paths, absolute paths and
 * symlinks leading out — never write outside the workspace root.
 */
import { ThreadId, TurnId } from "@forkjoin/schema/Ids"
import * as fc from "fast-check"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { hashTree } from "../../../test/support/tree.ts"
import { withEngine } from "./helpers.ts"

const base = fs.mkdtempSync(path.join(os.tmpdir(), "fj-prop-"))
afterAll(() => fs.rmSync(base, { recursive: true, force: true }))

const outside = path.join(base, "outside")
fs.mkdirSync(outside)
fs.writeFileSync(path.join(outside, "secret.txt"), "secret\n")
fs.mkdirSync(path.join(outside, "dir"))
fs.writeFileSync(path.join(outside, "dir", "x.txt"), "x\n")

const PATHS = [
  "a.txt", "sub/b.txt", "new/c.txt", "../outside/secret.txt", "../outside/new.txt", "link/secret.txt", "link/dir/x.txt",
  "link/fresh.txt", "filelink", "sub/../../outside/secret.txt", `${outside}/secret.txt`, "/tmp/fj-never.txt",
  ".git/config", "deep/link/x.txt", "sub\\..\\..\\outside\\secret.txt", "./a.txt", "sub/./b.txt", "uplink/outside/secret.txt"
]
const lineArb = fc.constantFrom("secret", "x", "a", "b", "new", "")
const opArb = fc.oneof(
  fc.record({ kind: fc.constant("add"), path: fc.constantFrom(...PATHS), text: lineArb }),
  fc.record({ kind: fc.constant("delete"), path: fc.constantFrom(...PATHS) }),
  fc.record({ kind: fc.constant("update"), path: fc.constantFrom(...PATHS), old: lineArb, text: lineArb }),
  fc.record({ kind: fc.constant("move"), path: fc.constantFrom(...PATHS), to: fc.constantFrom(...PATHS), old: lineArb, text: lineArb })
)

const render = (ops: ReadonlyArray<{ kind: string; path: string; text?: string; old?: string; to?: string }>): string =>
  [
    "*** Begin Patch",
    ...ops.flatMap((o) =>
      o.kind === "add"
        ? [`*** Add File: ${o.path}`, `+${o.text}`]
        : o.kind === "delete"
        ? [`*** Delete File: ${o.path}`]
        : [`*** Update File: ${o.path}`, ...(o.kind === "move" ? [`*** Move to: ${o.to}`] : []), "@@", `-${o.old}`, `+${o.text}`]
    ),
    "*** End Patch"
  ].join("\n")

describe("path safety property", () => {
  it("no random patch writes outside the workspace", async () => {
    const outsideBefore = hashTree(outside)
    const baseEntries = () => fs.readdirSync(base).filter((n) => !n.startsWith("ws-")).sort()
    const entriesBefore = baseEntries()
    let n = 0
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 4 }), fc.constantFrom("native", "codex"), fc.boolean(), async (ops, profile, overwrite) => {
        const ws = path.join(base, `ws-${n++}`)
        fs.mkdirSync(path.join(ws, "sub"), { recursive: true })
        fs.writeFileSync(path.join(ws, "a.txt"), "a\n")
        fs.writeFileSync(path.join(ws, "sub", "b.txt"), "b\n")
        fs.symlinkSync(outside, path.join(ws, "link"))
        fs.symlinkSync(path.join(outside, "secret.txt"), path.join(ws, "filelink"))
        fs.symlinkSync(base, path.join(ws, "uplink"))
        fs.mkdirSync(path.join(ws, "deep"))
        fs.symlinkSync(outside, path.join(ws, "deep", "link"))
        await withEngine(ws, (e) =>
          e.applyPatch({
            threadId: ThreadId.make("t"),
            turnId: TurnId.make("u"),
            patch: render(ops),
            profile: profile as "native" | "codex",
            grant: { write: true, createDirs: true, overwrite }
          }))
        expect(hashTree(outside)).toBe(outsideBefore)
        expect(baseEntries()).toEqual(entriesBefore)
        expect(fs.existsSync("/tmp/fj-never.txt")).toBe(false)
        fs.rmSync(ws, { recursive: true, force: true })
      }),
      { numRuns: 300 }
    )
  })
})
