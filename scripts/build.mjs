#!/usr/bin/env node
/**
 * Bundles the forkjoin CLI (`packages/cli/src/main.ts`) into CommonJS chunks that run on plain
 * Node 20 without a TypeScript loader: the entry `packages/cli/dist/forkjoin.cjs` and the
 * `forkjoin-<hash>.cjs` chunks it loads on demand; and warms their V8 code caches
 * (`<chunk>.<identity>.v8cache`, used by the launcher) with one apply.
 *
 * Also writes the library: `dist/index.mjs` (the facade, with `effect` and the native addons left
 * to node_modules) and its declarations, `dist/index.d.ts` over `dist/types/`.
 *
 * Run by the root `prepare` script and, when the bundle is missing, by the CLI launcher
 * (`packages/cli/bin/forkjoin.mjs`). Pass `--metafile` to also write
 * `packages/cli/dist/meta.json` and print the biggest inputs (cold-start analysis).
 */
import * as esbuild from "esbuild"
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const outfile = join(root, "packages/cli/dist/forkjoin.cjs")
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
// Native addons: loaded from node_modules at run time, never bundled.
const nativeAddons = JSON.parse(readFileSync(join(root, "scripts/native-addons.json"), "utf8"))
const wantMetafile = process.argv.includes("--metafile")

// The engine fingerprint's source digest, computed by the same module that computes it from
// source (packages/autonomy/src/Fingerprint.ts), so bundle and source runs agree on evidence.
const sourceDigest = await (async () => {
  const fingerprint = await esbuild.build({
    write: false,
    absWorkingDir: root,
    entryPoints: [join(root, "packages/autonomy/src/Fingerprint.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning"
  })
  const url = `data:text/javascript;base64,${Buffer.from(fingerprint.outputFiles[0].contents).toString("base64")}`
  const { sourceDigestOf } = await import(url)
  return sourceDigestOf(root)
})()

// The CLI is split into chunks, each evaluated only when a command first needs it: `--version`
// and `--help` read and run the command definitions, effect and its cli; `apply` adds the
// engine and the history store; isomorphic-git, the MCP server, the HTTP gateway and the
// merge drivers load only for the commands that use them. esbuild splits only ES modules, so
// each chunk is then turned into CommonJS, wrapped in the function the launcher calls
// (`(function (exports, require, module, __filename, __dirname) {...})`, as Node wraps a
// module) and run by the launcher through `vm.Script` with a V8 code cache of its own.
const dist = dirname(outfile)
const CHUNK_WRAPPER = "(function (exports, require, module, __filename, __dirname) {"
const TO_COMMONJS = {
  from: "__toCommonJS=mod=>__copyProps(__defProp({},\"__esModule\",{value:!0}),mod);",
  to: "__toCommonJS=mod=>__defProp(mod,\"__esModule\",{value:!0});"
}
const result = await esbuild.build({
  write: false,
  absWorkingDir: root,
  entryPoints: { forkjoin: join(root, "packages/cli/src/main.ts") },
  outdir: dist,
  splitting: true,
  // `forkjoin-<hash>.cjs`: the launcher loads any `./forkjoin-*.cjs` a chunk requires itself.
  chunkNames: "forkjoin-[hash]",
  outExtension: { ".js": ".cjs" },
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  minifyWhitespace: true,
  minifySyntax: true,
  // Only whitespace/syntax: identifiers stay readable in stack traces.
  legalComments: "none",
  logLevel: "warning",
  // Always: the chunk manifest below comes from it.
  metafile: true,
  define: {
    __FORKJOIN_VERSION__: JSON.stringify(version),
    __FORKJOIN_SOURCE_DIGEST__: JSON.stringify(sourceDigest)
  },
  external: nativeAddons,
  plugins: [{
    // effect's HTTP API reference pages (Scalar, Swagger UI: 5 MB) are imported on demand by
    // modules forkjoin never calls; one bundle tree-shakes them, splitting would emit them.
    name: "no-http-api-docs",
    setup(build) {
      build.onResolve({ filter: /internal\/httpApi(Scalar|Swagger)\.js$/ }, (args) => ({ path: args.path, external: true }))
    }
  }, {
    // effect/cli creates an Intl.Segmenter when its module loads (ICU's break data: tens of ms),
    // though only help and tables measure text: create it on the first measurement instead.
    name: "lazy-grapheme-segmenter",
    setup(build) {
      build.onLoad({ filter: /effect\/dist\/cli\/CliOutput\.js$/ }, (args) => {
        const text = readFileSync(args.path, "utf8")
        const eager = /const graphemeSegmenter = \/\*#__PURE__\*\/new Intl\.Segmenter\(undefined, \{\s*granularity: "grapheme"\s*\}\);/
        if (!eager.test(text)) throw new Error("effect/cli/CliOutput.js no longer creates its Intl.Segmenter as scripts/build.mjs expects: update or drop the lazy-grapheme-segmenter plugin")
        const lazy = "let graphemeSegmenterOnce;\n" +
          "const graphemeSegmenter = { segment: (text) => (graphemeSegmenterOnce ??= new Intl.Segmenter(undefined, { granularity: \"grapheme\" })).segment(text) };"
        return { contents: text.replace(eager, lazy), loader: "js" }
      })
    }
  }],
  // effect reads `import.meta.env` defensively; in CommonJS it is simply absent.
  logOverride: { "empty-import-meta": "silent" },
})
mkdirSync(dist, { recursive: true })
const chunkFiles = []
for (const file of result.outputFiles) {
  const cjs = await esbuild.transform(file.text, {
    format: "cjs",
    target: "node20",
    // `import()` of a chunk becomes `require()`, which the launcher answers synchronously.
    supported: { "dynamic-import": false },
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: "warning",
    logOverride: { "empty-import-meta": "silent" }
  })
  const name = relative(dist, file.path)
  // A chunk's exports: esbuild copies its exports object (getters) into a second one, so every
  // use of another chunk's binding would go through two getters; export the first one instead.
  const exporting = cjs.code.includes("__toCommonJS(")
  const code = exporting ? cjs.code.replace(TO_COMMONJS.from, TO_COMMONJS.to) : cjs.code
  if (exporting && !code.includes(TO_COMMONJS.to)) throw new Error(`build: esbuild's __toCommonJS helper in ${name} is not the one scripts/build.mjs replaces; update TO_COMMONJS`)
  const text = `${CHUNK_WRAPPER}${code}\n})`
  chunkFiles.push({ name, text })
}
// Chunks first, the entry last (each through a temp file and a rename: tests may run the CLI
// while it rebuilds, and a process started from the old entry may still load its chunks). An
// unchanged chunk is not rewritten, so its code cache stays valid; the entry always is (its
// time says when the last build ran: .ci/run reads it).
chunkFiles.sort((a, b) => (a.name === "forkjoin.cjs") - (b.name === "forkjoin.cjs"))
for (const { name, text } of chunkFiles) {
  const target = join(dist, name)
  if (name !== "forkjoin.cjs" && existsSync(target) && readFileSync(target, "utf8") === text) continue
  writeFileSync(`${target}.${process.pid}.tmp`, text)
  renameSync(`${target}.${process.pid}.tmp`, target)
}
// Which sources each chunk holds, `dist/forkjoin.chunks.json`: what a command evaluates is the
// chunks it loads (the start-up test reads it; so can a cold-start analysis).
const chunkModules = Object.fromEntries(
  Object.entries(result.metafile.outputs).map(([file, output]) => [relative(dist, join(root, file)), Object.keys(output.inputs).sort()])
)
writeFileSync(join(dist, `forkjoin.chunks.json.${process.pid}.tmp`), `${JSON.stringify(chunkModules, null, 1)}\n`)
renameSync(join(dist, `forkjoin.chunks.json.${process.pid}.tmp`), join(dist, "forkjoin.chunks.json"))
// Chunks of earlier builds, their code caches and temp files a killed process left: removed
// once untouched for ten minutes (a CLI started before then may still load an old chunk).
{
  const current = new Set(chunkFiles.map((c) => c.name))
  const stale = Date.now() - 10 * 60_000
  for (const name of readdirSync(dist)) {
    const [, chunk, rest] = /^(forkjoin(?:-[A-Z0-9]+)?\.cjs)(\..+)?$/.exec(name) ?? []
    if (chunk === undefined || (current.has(chunk) && !(rest ?? "").endsWith(".tmp"))) continue
    try {
      if (statSync(join(dist, name)).mtimeMs < stale) rmSync(join(dist, name), { force: true })
    } catch {
      // removed by a concurrent build
    }
  }
}

// The library facade: `import { openWorkspace } from "@forkjoin/forkjoin"` (root package.json
// "exports"). `effect` stays external: it is a dependency of the package, which its types name too.
const facade = join(root, "dist/index.mjs")
const facadeResult = await esbuild.build({
  write: false,
  absWorkingDir: root,
  entryPoints: [join(root, "packages/engine/src/Facade.ts")],
  outfile: facade,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  minifySyntax: true,
  legalComments: "none",
  logLevel: "warning",
  external: [...nativeAddons, "effect", "effect/*"]
})
mkdirSync(dirname(facade), { recursive: true })
writeFileSync(`${facade}.${process.pid}.tmp`, facadeResult.outputFiles[0].contents)
renameSync(`${facade}.${process.pid}.tmp`, facade)

// The facade's declarations: tsc emits the .d.ts of the facade and of every workspace module it
// reaches; the `@forkjoin/*` workspace specifiers (not published) become relative paths, so the
// package's types name only itself, `effect` and Node. Written to a temp folder and renamed into
// place, like the bundles: tests may rebuild while another build runs.
{
  const typesDir = join(root, "dist/types")
  const temp = join(root, `dist/types.${process.pid}.tmp`)
  rmSync(temp, { recursive: true, force: true })
  const tsc = join(dirname(createRequire(import.meta.url).resolve("typescript/package.json")), "bin/tsc")
  // Through node_modules tsc would take the workspace packages for libraries and emit nothing for
  // them: `paths` make their sources part of the program.
  const paths = {}
  for (const pkg of readdirSync(join(root, "packages"))) {
    if (!existsSync(join(root, "packages", pkg, "src/index.ts"))) continue
    paths[`@forkjoin/${pkg}`] = [`../packages/${pkg}/src/index.ts`]
    paths[`@forkjoin/${pkg}/*`] = [`../packages/${pkg}/src/*.ts`]
  }
  const config = `${temp}.json`
  writeFileSync(config, JSON.stringify({ extends: "../scripts/tsconfig.declarations.json", compilerOptions: { paths, outDir: `./${relative(join(root, "dist"), temp)}` } }))
  try {
    execFileSync(process.execPath, [tsc, "-p", config], { cwd: root, stdio: "inherit" })
  } finally {
    rmSync(config, { force: true })
  }
  const files = []
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name))
      else if (entry.name.endsWith(".d.ts")) files.push(join(dir, entry.name))
    }
  }
  walk(temp)
  const specifierOf = (file, spec) => {
    let target
    if (spec.startsWith("@forkjoin/")) {
      const [, pkg, ...rest] = spec.split("/")
      target = join(temp, pkg, "src", rest.length === 0 ? "index" : rest.join("/"))
    } else if (spec.startsWith(".") && spec.endsWith(".ts")) target = join(dirname(file), spec.slice(0, -3))
    else return spec
    if (!existsSync(`${target}.d.ts`)) throw new Error(`build: ${relative(temp, file)} names ${spec}, which has no emitted declaration`)
    const rel = relative(dirname(file), target).split("\\").join("/")
    return `${rel.startsWith(".") ? rel : `./${rel}`}.js`
  }
  for (const file of files) {
    const text = readFileSync(file, "utf8")
    writeFileSync(file, text.replace(/(\bfrom\s+|\bimport\s*\(\s*)"([^"]+)"/g, (_, lead, spec) => `${lead}${JSON.stringify(specifierOf(file, spec))}`))
  }
  // A concurrent build may put its folder back between the two calls: then replace that one.
  for (let attempt = 0; ; attempt++) {
    rmSync(typesDir, { recursive: true, force: true })
    try {
      renameSync(temp, typesDir)
      break
    } catch (e) {
      if (attempt >= 3) throw e
    }
  }
  writeFileSync(`${facade}.d.ts.${process.pid}.tmp`, `export * from "./types/engine/src/Facade.js"\n`)
  renameSync(`${facade}.d.ts.${process.pid}.tmp`, join(root, "dist/index.d.ts"))
}

const bundle = chunkFiles.map((c) => c.text).join("\n")
// undici (pulled in by @effect/platform-node's index) needs Node 22; deep imports must keep it out.
if (/\bundici\b/.test(bundle)) {
  console.error("build: packages/cli/dist/forkjoin*.cjs references undici; use deep @effect/platform-node imports")
  process.exit(1)
}

if (wantMetafile) {
  writeFileSync(join(root, "packages/cli/dist/meta.json"), JSON.stringify(result.metafile))
  const inputs = Object.values(result.metafile.outputs).flatMap((output) => Object.entries(output.inputs))
    .sort((a, b) => b[1].bytesInOutput - a[1].bytesInOutput)
    .slice(0, 25)
  for (const [file, info] of inputs) console.log(`${String(info.bytesInOutput).padStart(8)}  ${file}`)
  console.log(`total ${bundle.length} bytes in ${chunkFiles.length} files`)
}

// Warm the code cache: one real apply on a throwaway workspace compiles the hot path, and the
// launcher writes the cache on exit (a stale cache is rejected by V8 and rewritten).
{
  const { mkdtempSync, writeFileSync: write } = await import("node:fs")
  const { tmpdir } = await import("node:os")
  const ws = mkdtempSync(join(tmpdir(), "fj-warm-"))
  try {
    write(join(ws, "a.txt"), "one\n")
    execFileSync(process.execPath, [join(root, "packages/cli/bin/forkjoin.mjs"), "apply", "-", "--workspace", ws, "--json"], {
      input: "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch\n",
      stdio: ["pipe", "ignore", "inherit"]
    })
  } finally {
    rmSync(ws, { recursive: true, force: true })
  }
}

