/**
 * The promise facade as a non-Effect user sees it: `import { openWorkspace } from "@forkjoin/forkjoin"`
 * in plain Node (the built bundle), resolving to records and rejecting with a typed error.
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { projectRoot } from "../support/tree.ts"

const dirs: Array<string> = []
afterAll(() => dirs.splice(0).forEach((d) => fs.rmSync(d, { recursive: true, force: true })))

describe('import { openWorkspace } from "@forkjoin/forkjoin"', () => {
  it("applies, records, rejects with a code, and closes", () => {
    if (!fs.existsSync(path.join(projectRoot, "dist/index.mjs"))) execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: projectRoot })
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), "fj-lib-"))
    dirs.push(ws)
    fs.writeFileSync(path.join(ws, "a.txt"), "one\n")
    const script = `
      import { openWorkspace, EngineError } from "@forkjoin/forkjoin"
      const ws = await openWorkspace(${JSON.stringify(ws)})
      const patch = (from, to) => "*** Begin Patch\\n*** Update File: a.txt\\n@@\\n-" + from + "\\n+" + to + "\\n*** End Patch"
      const r1 = await ws.applyPatch(patch("one", "two"), { threadId: "t", turnId: "u" })
      const r2 = await ws.applyPatch(patch("two", "three"), { threadId: "t", turnId: "u", profile: "codex" })
      let error
      try { await ws.applyPatch(patch("nope", "x"), { threadId: "t", turnId: "u" }) } catch (e) { error = e }
      let idError
      try { await ws.applyPatch(patch("three", "four"), { threadId: "", turnId: "u" }) } catch (e) { idError = e }
      const r3 = await ws.applyPatch(patch("three", "four"))
      let textError
      try { await ws.applyPatch() } catch (e) { textError = e }
      const timeline = await ws.history.timeline({ caller: "t" })
      const file = await ws.history.file({ caller: "t", path: "a.txt" })
      let viewError
      try { await ws.history.file({ caller: "t", path: "../outside.txt" }) } catch (e) { viewError = e }
      await ws.close()
      console.log(JSON.stringify({
        ordinals: [r1.commitOrdinal, r2.commitOrdinal],
        transaction: r1.transactionId,
        typed: error instanceof EngineError && error instanceof Error,
        code: error?.code, stage: error?.stage, paths: error?.paths,
        timeline: timeline.items.map((i) => i.commitOrdinal),
        coverage: timeline.coverage,
        fileItems: file.items.length,
        viewError: viewError?._tag + ":" + viewError?.reason,
        idError: [idError instanceof EngineError, idError?.code, idError?.stage, idError?.message],
        defaults: [r3.threadId, r3.turnId, r3.commitOrdinal],
        textError: [textError instanceof EngineError, textError?.code, textError?.stage, textError?.message]
      }))`
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: projectRoot, encoding: "utf8" })
    expect(run.status, run.stderr).toBe(0)
    const out = JSON.parse(run.stdout)
    expect(out.ordinals).toEqual([1, 2])
    expect(out.transaction).toMatch(/^patch:[0-9a-f-]{36}$/)
    expect(out).toMatchObject({ typed: true, code: "context_not_found", stage: 5, paths: ["a.txt"] })
    expect(out.timeline).toEqual([1, 2])
    expect(out.coverage).toMatchObject({ exact: 2 })
    expect(out.fileItems).toBe(2)
    expect(out.viewError).toBe("ViewError:PathRefused")
    expect(out.idError).toEqual([true, "request_invalid", 1, expect.stringMatching(/empty/)])
    // No options: recorded in thread and turn `library`.
    expect(out.defaults).toEqual(["library", "library", 3])
    expect(out.textError).toEqual([true, "request_invalid", 1, expect.stringMatching(/patch text .* a string \(got undefined\)/)])
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("four\n")
  })
})
