import * as Result from "effect/Result"
import { parsePatch, patchTargets, planPatch, type FileState } from "../../packages/patch/src/index.ts"
import { makeFormatWorkload } from "./fixture.ts"
import { timed } from "./harness.ts"
const w = makeFormatWorkload(0x5eedf0a7, 100_000, 2000)
const bytes = new Uint8Array(Buffer.from(w.original))
const files = new Map<string, FileState>([[w.path, { _tag: "File", bytes }]])
for (const profile of ["native", "codex"] as const) {
  const ps: string[] = []
  for (let i = 0; i < 40; i++) {
    ;(globalThis as { gc?: () => void }).gc?.()
    const p = timed(() => { const r = parsePatch(w.patch, { profile }); if (Result.isFailure(r)) throw 1; patchTargets(r.success); return planPatch(r.success, files, { profile, allowOverwrite: false }) })
    ps.push(p.ms.toFixed(0))
  }
  console.log(profile, ps.join(" "))
}
