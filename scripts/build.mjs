#!/usr/bin/env node
/**
 * Bundles the forkjoin CLI (`packages/cli/src/main.ts`) into one ESM file,
 * `packages/cli/dist/forkjoin.mjs`, that runs on plain Node 20 without a TypeScript loader.
 *
 * Run by the root `prepare` script and, when the bundle is missing, by the CLI launcher
 * (`packages/cli/bin/forkjoin.mjs`). Pass `--metafile` to also write
 * `packages/cli/dist/meta.json` and print the biggest inputs (cold-start analysis).
 */
import * as esbuild from "esbuild"
import { readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const outfile = join(root, "packages/cli/dist/forkjoin.mjs")
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
const wantMetafile = process.argv.includes("--metafile")

const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: [join(root, "packages/cli/src/main.ts")],
  outfile,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  minifyWhitespace: true,
  minifySyntax: true,
  // Only whitespace/syntax: identifiers stay readable in stack traces.
  legalComments: "none",
  logLevel: "warning",
  metafile: wantMetafile,
  define: {
    __FORKJOIN_VERSION__: JSON.stringify(version)
  },
  // A native addon: loaded from node_modules at run time (ESM default import of its CJS export).
  external: ["better-sqlite3"],
})

// The library facade: `import { openWorkspace } from "forkjoin"` (root package.json "exports").
await esbuild.build({
  absWorkingDir: root,
  entryPoints: [join(root, "packages/engine/src/Facade.ts")],
  outfile: join(root, "dist/index.mjs"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  minifySyntax: true,
  legalComments: "none",
  logLevel: "warning",
  external: ["better-sqlite3"]
})

const bundle = readFileSync(outfile, "utf8")
// undici (pulled in by @effect/platform-node's index) needs Node 22; deep imports must keep it out.
if (/\bundici\b/.test(bundle)) {
  console.error("build: packages/cli/dist/forkjoin.mjs references undici; use deep @effect/platform-node imports")
  process.exit(1)
}

// No bundled dependency calls `require` today, so no `createRequire` banner (it costs start-up
// time). If one starts to, esbuild emits a `__require` shim that throws at run time: fail here.
if (bundle.includes("__require(")) {
  console.error("build: the bundle calls require(); add a createRequire banner to scripts/build.mjs")
  process.exit(1)
}

if (wantMetafile && result.metafile) {
  writeFileSync(join(root, "packages/cli/dist/meta.json"), JSON.stringify(result.metafile))
  const inputs = Object.entries(result.metafile.outputs[Object.keys(result.metafile.outputs)[0]].inputs)
    .sort((a, b) => b[1].bytesInOutput - a[1].bytesInOutput)
    .slice(0, 25)
  for (const [file, info] of inputs) console.log(`${String(info.bytesInOutput).padStart(8)}  ${file}`)
  console.log(`total ${bundle.length} bytes`)
}
