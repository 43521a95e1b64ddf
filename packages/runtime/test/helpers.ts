/** Runtime test helpers: temp workspaces, a "not even temporarily" fingerprint, and running over a real engine. */
import { Engine } from "@forkjoin/engine/Engine"
import { layerMemory } from "@forkjoin/history/HistoryStoreSqlite"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { sandboxes } from "../../../test/support/sandbox.ts"
import { BlobStore, type BlobStoreError } from "../src/BlobStore.ts"


/**
 * Fresh temp workspaces holding files (relative path → text or bytes), with their `.forkjoin/`
 * already there; `removeSandboxes` removes every one made.
 */
export const { makeWorkspace, removeSandboxes } = sandboxes("fj-runtime-")

/**
 * Every entry of the tree except forkjoin's own `.forkjoin/` (engine state, run artifacts):
 * kind, inode, size, mode, content hash, and nanosecond mtime and ctime. ctime cannot be set
 * back, so a write that was later "restored" (the Auto-Coding approach) still shows, and so
 * does a temp file created and removed in a directory (its mtime/ctime move).
 */
export const fingerprint = (ws: string): Map<string, string> => {
  const out = new Map<string, string>()
  const walk = (dir: string, rel: string) => {
    const d = fs.lstatSync(dir, { bigint: true })
    out.set(`${rel}/`, `dir ino=${d.ino} mode=${d.mode} mtime=${d.mtimeNs} ctime=${d.ctimeNs}`)
    for (const name of fs.readdirSync(dir).sort()) {
      const r = rel === "" ? name : `${rel}/${name}`
      if (r === ".forkjoin") continue
      const abs = path.join(dir, name)
      const s = fs.lstatSync(abs, { bigint: true })
      if (s.isDirectory()) {
        walk(abs, r)
        continue
      }
      const content = s.isSymbolicLink()
        ? `link=${fs.readlinkSync(abs)}`
        : s.isFile()
        ? `sha256=${createHash("sha256").update(fs.readFileSync(abs)).digest("hex")}`
        : "special"
      out.set(r, `ino=${s.ino} size=${s.size} mode=${s.mode} mtime=${s.mtimeNs} ctime=${s.ctimeNs} ${content}`)
    }
  }
  walk(ws, "")
  return out
}

/** The engine (over an in-memory history) plus a blob store, for `ws`. */
export const layers = (
  ws: string,
  blobs: Layer.Layer<BlobStore, BlobStoreError> = BlobStore.layerMemory
) => Layer.mergeAll(Engine.layer({ root: ws }).pipe(Layer.provide(layerMemory)), blobs)

/** Runs `program` over `layers(ws)` and returns its exit. */
export const run = <A, E>(
  ws: string,
  program: Effect.Effect<A, E, Engine | BlobStore>,
  blobs?: Layer.Layer<BlobStore, BlobStoreError>
): Promise<Exit.Exit<A, unknown>> =>
  Effect.runPromise(Effect.exit(program).pipe(Effect.provide(layers(ws, blobs))))

/** The value of a successful exit (throws with the cause otherwise). */
export const valueOf = <A>(exit: Exit.Exit<A, unknown>): A => {
  if (Exit.isSuccess(exit)) return exit.value
  throw new Error(`expected success, got ${String(exit.cause)}`)
}

/** UTF-8 bytes of a string. */
export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s)

/** Text of bytes. */
export const text = (b: Uint8Array): string => Buffer.from(b).toString("utf8")

/** Deterministic pseudo-random bytes with NULs (binary, not UTF-8). */
export const binary = (size: number, seed = 1): Uint8Array => {
  const out = new Uint8Array(size)
  let x = seed
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0
    out[i] = i % 97 === 0 ? 0 : x >>> 24
  }
  return out
}

/** Wraps body lines in patch markers. */
export const patchOf = (...body: ReadonlyArray<string>): string => ["*** Begin Patch", ...body, "*** End Patch"].join("\n")
