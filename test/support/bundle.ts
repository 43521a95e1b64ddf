/** Bundles a TypeScript entry for a child process (Node 20 cannot run .ts directly). */
import { buildSync } from "esbuild"
import * as fs from "node:fs"
import * as path from "node:path"
import { projectRoot } from "./tree.ts"

/** The native addons every bundle leaves to node_modules (the list the build scripts use). */
export const nativeAddons: Array<string> = JSON.parse(fs.readFileSync(path.join(projectRoot, "scripts", "native-addons.json"), "utf8"))

/** Bundles `entry` (relative to the project root) into `.bench-cache/test-build/` and returns the .mjs path. */
export const bundle = (entry: string): string => {
  const out = path.join(projectRoot, ".bench-cache", "test-build", `${path.basename(entry, ".ts")}-${process.pid}.mjs`)
  fs.mkdirSync(path.dirname(out), { recursive: true })
  buildSync({
    entryPoints: [path.join(projectRoot, entry)],
    outfile: out,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    external: nativeAddons,
    logLevel: "warning"
  })
  return out
}
