/** Temp workspaces for tests, one set per test module, removed together. */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/** Writes `files` (relative path → text or bytes) under `root`, making folders as needed. */
export const writeTree = (root: string, files: Record<string, string | Uint8Array>): void => {
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true })
    fs.writeFileSync(path.join(root, rel), content)
  }
}

/**
 * A set of temp workspaces named `prefix…`: `makeWorkspace(files)` makes one holding `files`
 * (with its `.forkjoin/` already there unless `stateDir` is false, so starting an engine later
 * does not change the root directory); `removeSandboxes()` removes every one made so far.
 */
export const sandboxes = (prefix: string, options: { readonly stateDir?: boolean } = {}) => {
  const made: Array<string> = []
  return {
    makeWorkspace: (files: Record<string, string | Uint8Array> = {}): string => {
      const ws = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
      made.push(ws)
      if (options.stateDir !== false) fs.mkdirSync(path.join(ws, ".forkjoin"))
      writeTree(ws, files)
      return ws
    },
    removeSandboxes: (): void => {
      for (const s of made.splice(0)) fs.rmSync(s, { recursive: true, force: true })
    }
  }
}
