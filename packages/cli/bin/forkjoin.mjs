#!/usr/bin/env node
// forkjoin launcher. Runs the esbuild bundle (CommonJS) through `vm.Script` with a V8 code
// cache beside it: Node 20 has no module compile cache, and compiling the ~600 KB bundle is
// a third of a cold start. When the bundle is missing (a checkout where `prepare` did not
// run), it builds it once with scripts/build.mjs first.
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import * as vm from "node:vm"

const bundle = fileURLToPath(new URL("../dist/forkjoin.cjs", import.meta.url))
if (!existsSync(bundle)) {
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

// V8 checks a cache against the source length only, not its content: key the cache by the
// bundle file's identity (the build replaces it with a rename: new inode and mtime).
const stat = statSync(bundle)
const cacheFile = `${bundle}.${stat.size}-${Math.floor(stat.mtimeMs)}-${stat.ino}.v8cache`
let cachedData
try {
  cachedData = readFileSync(cacheFile)
} catch {
  // no cache yet: compile from source and write one on exit
}
const source = readFileSync(bundle, "utf8")
const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
  filename: bundle,
  cachedData
})
if (cachedData === undefined || script.cachedDataRejected === true) {
  // Written after the run, so the functions this command compiled lazily are in it too.
  process.once("exit", () => {
    try {
      const temp = `${cacheFile}.${process.pid}.tmp`
      writeFileSync(temp, script.createCachedData())
      renameSync(temp, cacheFile)
      const dir = fileURLToPath(new URL("../dist/", import.meta.url))
      for (const name of readdirSync(dir)) {
        if (name.endsWith(".v8cache") && `${dir}${name}` !== cacheFile) rmSync(`${dir}${name}`, { force: true })
      }
    } catch {
      // read-only install: run uncached
    }
  })
}
const module = { exports: {} }
script.runInThisContext()(module.exports, createRequire(bundle), module, bundle, fileURLToPath(new URL("../dist/", import.meta.url)))
