/**
 * One writer process of the concurrency test: `applies` patches through the library facade,
 * alternating an append to the shared file and an append to its own file, retrying on
 * `stale_file`/`lock_timeout` (another process got there first). Prints a JSON summary.
 */
import { EngineError, openWorkspace } from "../../packages/engine/src/Facade.ts"

const [ws, id, countText] = process.argv.slice(2) as [string, string, string]
const applies = Number(countText)
const workspace = await openWorkspace(ws, { lockTimeoutMs: 60_000 })
let retries = 0
for (let j = 0; j < applies; j++) {
  const file = j % 2 === 0 ? "shared.txt" : `own-${id}.txt`
  const patch = `*** Begin Patch\n*** Update File: ${file}\n@@\n+p${id} n${j}\n*** End Patch\n`
  for (;;) {
    try {
      await workspace.applyPatch(patch, { threadId: `proc-${id}`, turnId: `turn-${id}` })
      break
    } catch (e) {
      if (e instanceof EngineError && (e.code === "stale_file" || e.code === "lock_timeout")) {
        retries++
        continue
      }
      throw e
    }
  }
}
await workspace.close()
process.stdout.write(JSON.stringify({ id, applies, retries }) + "\n")
