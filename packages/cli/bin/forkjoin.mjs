#!/usr/bin/env node
// forkjoin launcher. Runs the esbuild bundle, CommonJS chunks (`dist/forkjoin.cjs`, the entry,
// and the `dist/forkjoin-<hash>.cjs` it requires on demand), each through `vm.Script` with a V8
// code cache beside it: Node 20 has no module compile cache, and compiling is a third of a cold
// start. A command reads, deserialises and evaluates only the chunks it uses. When the bundle is
// missing (a checkout where `prepare` did not run), it builds it once with scripts/build.mjs first.
import { isAscii } from "node:buffer"
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import * as vm from "node:vm"

const dist = fileURLToPath(new URL("../dist/", import.meta.url))
const entry = `${dist}forkjoin.cjs`
if (!existsSync(entry)) {
  // Loaded only here: every normal start skips the child_process module.
  const { execFileSync } = await import("node:child_process")
  try {
    // Build output goes to stderr so stdout stays clean for `--json` consumers.
    execFileSync(process.execPath, [fileURLToPath(new URL("../../../scripts/build.mjs", import.meta.url))], {
      stdio: ["ignore", 2, 2]
    })
  } catch {
    process.stderr.write("forkjoin: the CLI bundle is missing and building it failed; run 'npm run build' in the forkjoin checkout.\n")
    process.exit(2)
  }
}

// Everything but the chunks (node: modules, the native addons) resolves from the entry's folder.
const nodeRequire = createRequire(entry)
const chunks = new Map()
// Scripts compiled without a usable cache: their caches are written after the run, so the
// functions this command compiled lazily are in them too.
const uncached = []

const load = (file) => {
  const loaded = chunks.get(file)
  if (loaded !== undefined) return loaded.exports
  // V8 checks a cache against the source length only, not its content: key the cache by the
  // chunk file's identity (the build replaces it with a rename: new inode and mtime).
  const stat = statSync(file)
  const cacheFile = `${file}.${stat.size}-${Math.floor(stat.mtimeMs)}-${stat.ino}.v8cache`
  let cachedData
  try {
    cachedData = readFileSync(cacheFile)
  } catch {
    // no cache yet: compile from source and write one on exit
  }
  // The build wraps each chunk in the module function. Nearly every chunk is ASCII: a one-byte
  // string, half the memory of the two-byte string a UTF-8 decode of a non-ASCII file gives.
  const bytes = readFileSync(file)
  const source = bytes.toString(isAscii(bytes) ? "latin1" : "utf8")
  const script = new vm.Script(source, { filename: file, cachedData })
  if (cachedData === undefined || script.cachedDataRejected === true) uncached.push({ script, cacheFile, file })
  const module = { exports: {} }
  chunks.set(file, module)
  script.runInThisContext()(module.exports, chunkRequire, module, file, dist)
  return module.exports
}

// What a chunk's `require` answers: another chunk from this folder, else Node's require.
const chunkRequire = (specifier) =>
  specifier.startsWith("./forkjoin-") && specifier.endsWith(".cjs") && !specifier.includes("/", 2)
    ? load(`${dist}${specifier.slice(2)}`)
    : nodeRequire(specifier)

process.once("exit", () => {
  if (uncached.length === 0) return
  let names
  try {
    names = readdirSync(dist)
  } catch {
    return
  }
  for (const { script, cacheFile, file } of uncached) {
    try {
      const temp = `${cacheFile}.${process.pid}.tmp`
      writeFileSync(temp, script.createCachedData())
      renameSync(temp, cacheFile)
      // This chunk's caches for earlier builds of it.
      const prefix = file.slice(dist.length)
      for (const name of names) {
        if (name.startsWith(`${prefix}.`) && name.endsWith(".v8cache") && `${dist}${name}` !== cacheFile) rmSync(`${dist}${name}`, { force: true })
      }
    } catch {
      // read-only install: run uncached
    }
  }
})

load(entry)
