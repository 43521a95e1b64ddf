#!/usr/bin/env node
/**
 * Benchmark runner: `node scripts/bench.mjs <name> [args...]` (or `npm run bench -- <name> --json`).
 *
 * Bundles `test/bench/<name>.bench.ts` with esbuild (platform node, esm, target node20) into
 * `.bench-cache/build/<name>.mjs` and runs it with node, forwarding every other argument.
 * The bench receives the repository root in `FORKJOIN_BENCH_ROOT`. An unknown or missing
 * name lists the available benches and exits 2; a build failure exits 1; otherwise the
 * bench's own exit status is returned.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const benchDir = path.join(root, "test", "bench")
const buildDir = path.join(root, ".bench-cache", "build")
const SUFFIX = ".bench.ts"

/** Names of the benches under test/bench (files `<name>.bench.ts`), sorted. */
const availableBenches = () =>
  existsSync(benchDir)
    ? readdirSync(benchDir)
        .filter((f) => f.endsWith(SUFFIX))
        .map((f) => f.slice(0, -SUFFIX.length))
        .sort()
    : []

/** Prints the usage line and the list of benches to stderr. */
const usage = (message) => {
  const names = availableBenches()
  if (message) process.stderr.write(`${message}\n`)
  process.stderr.write("usage: npm run bench -- <name> [--json] [bench args...]\n")
  process.stderr.write(`available benches: ${names.length === 0 ? "(none)" : names.join(", ")}\n`)
}

const argv = process.argv.slice(2)
const nameIndex = argv.findIndex((a) => !a.startsWith("-"))
if (nameIndex === -1) {
  usage("bench: missing bench name")
  process.exit(2)
}
const name = argv[nameIndex]
const forwarded = [...argv.slice(0, nameIndex), ...argv.slice(nameIndex + 1)]
if (!/^[A-Za-z0-9_.-]+$/.test(name) || !availableBenches().includes(name)) {
  usage(`bench: unknown bench '${name}'`)
  process.exit(2)
}

const entry = path.join(benchDir, `${name}${SUFFIX}`)
const outfile = path.join(buildDir, `${name}.mjs`)
mkdirSync(buildDir, { recursive: true })

let esbuild
try {
  esbuild = await import("esbuild")
} catch (e) {
  process.stderr.write(`bench: cannot load esbuild (run npm install): ${e instanceof Error ? e.message : String(e)}\n`)
  process.exit(1)
}

try {
  await esbuild.build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    sourcemap: "inline",
    logLevel: "silent",
    // Native addons: loaded from node_modules at run time, never bundled.
    external: JSON.parse(readFileSync(path.join(root, "scripts/native-addons.json"), "utf8")),
    // Bundled CommonJS dependencies may call require(); give ESM output a real one.
    banner: {
      js: "import { createRequire as __benchCreateRequire } from 'node:module'; const require = __benchCreateRequire(import.meta.url);"
    }
  })
} catch (e) {
  const errors = e && typeof e === "object" && Array.isArray(e.errors) ? e.errors : []
  process.stderr.write(`bench: failed to build ${path.relative(root, entry)}\n`)
  if (errors.length > 0) {
    const formatted = await esbuild.formatMessages(errors, { kind: "error", color: false })
    process.stderr.write(formatted.join(""))
  } else {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`)
  }
  process.exit(1)
}

const run = spawnSync(process.execPath, ["--enable-source-maps", "--expose-gc", outfile, ...forwarded], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, FORKJOIN_BENCH_ROOT: root }
})
if (run.error) {
  process.stderr.write(`bench: failed to run ${path.relative(root, outfile)}: ${run.error.message}\n`)
  process.exit(1)
}
if (run.signal) {
  process.stderr.write(`bench: ${name} killed by ${run.signal}\n`)
  process.exit(1)
}
process.exit(run.status ?? 1)
