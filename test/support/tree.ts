/**
 * Test helpers over directory trees: read a tree into a path → bytes map, hash it, and
 * locate the shared fixtures (`../shared/...`, overridable by env) with a clear message.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** Project root (two levels above this file). */
export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")

/**
 * Resolves a shared fixture directory from `envVar` or `../shared/<rel>`; `undefined` (with the
 * reason) when absent so suites can say clearly why they cannot run.
 */
export const sharedDir = (envVar: string, rel: string): { dir: string; present: boolean } => {
  const dir = process.env[envVar] ?? path.resolve(projectRoot, "..", "shared", rel)
  return { dir, present: fs.existsSync(dir) }
}

/** Reads every regular file under `root` (relative POSIX path → bytes); symlinks are recorded by target. */
export const readTree = (root: string): Map<string, Uint8Array> => {
  const out = new Map<string, Uint8Array>()
  if (!fs.existsSync(root)) return out
  const walk = (dir: string, prefix: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const rel = prefix === "" ? e.name : `${prefix}/${e.name}`
      const abs = path.join(dir, e.name)
      if (e.isDirectory()) {
        out.set(`${rel}/`, new Uint8Array())
        walk(abs, rel)
      } else if (e.isSymbolicLink()) out.set(`${rel}@`, new TextEncoder().encode(fs.readlinkSync(abs)))
      else if (e.isFile()) out.set(rel, new Uint8Array(fs.readFileSync(abs)))
      // FIFOs, sockets, devices: reading could block; their presence is what matters.
      else out.set(`${rel}|special`, new Uint8Array())
    }
  }
  walk(root, "")
  return out
}

/** A stable digest of a whole tree (paths, kinds and bytes). */
export const hashTree = (root: string): string => {
  const h = createHash("sha256")
  for (const [p, b] of readTree(root)) h.update(p).update("\0").update(b).update("\0")
  return h.digest("hex")
}

/** Copies a directory tree (or creates an empty one when `from` is absent). */
export const copyTree = (from: string, to: string): void => {
  fs.mkdirSync(to, { recursive: true })
  if (fs.existsSync(from)) fs.cpSync(from, to, { recursive: true })
}

/** Files only (directories dropped), for comparisons that ignore empty directories. */
export const filesOnly = (tree: Map<string, Uint8Array>): Map<string, string> =>
  new Map([...tree].filter(([p]) => !p.endsWith("/")).map(([p, b]) => [p, Buffer.from(b).toString("latin1")]))
