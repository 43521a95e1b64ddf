/**
 * The workspace packages' imports: each package declares every forkjoin package its sources
 * import (an undeclared one resolves in this checkout only through the hoisted node_modules,
 * and breaks a package installed on its own), and imports go one way along the layers, so no
 * cycle can form.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { projectRoot } from "../support/tree.ts"

/** The layers, lowest first: a package may import only packages of a lower layer. */
const LAYERS: ReadonlyArray<ReadonlyArray<string>> = [
  ["schema", "http"],
  ["patch"],
  ["sqlite"],
  ["history"],
  ["engine"],
  ["runtime"],
  ["merge", "autonomy"],
  ["orchestrator"],
  ["drivers", "gateway", "probes", "cluster"],
  ["cli"]
]
const layerOf = (name: string): number => LAYERS.findIndex((layer) => layer.includes(name))

const folders = [
  ...fs.readdirSync(path.join(projectRoot, "packages")).map((name) => path.join(projectRoot, "packages", name)),
  path.join(projectRoot, "probes")
].filter((dir) => fs.existsSync(path.join(dir, "package.json")))

const sourcesOf = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|mts|tsx)$/.test(e.name))
    .map((e) => path.join(e.parentPath, e.name))

// Static imports, re-exports and dynamic imports of a forkjoin package, by the package's name.
const IMPORT = /(?:from\s+|import\s*\(\s*|import\s+)["']@forkjoin\/([a-z-]+)/g

const importsOf = (dir: string): Map<string, string> => {
  const found = new Map<string, string>()
  for (const file of sourcesOf(path.join(dir, "src"))) {
    for (const match of fs.readFileSync(file, "utf8").matchAll(IMPORT)) {
      if (!found.has(match[1]!)) found.set(match[1]!, path.relative(projectRoot, file))
    }
  }
  return found
}

describe("workspace packages", () => {
  it("every package is in one layer", () => {
    const names = folders.map((dir) => path.basename(dir))
    expect(names.length).toBeGreaterThan(5)
    expect(names.filter((name) => layerOf(name) === -1)).toEqual([])
  })

  it.each(folders.map((dir) => [path.basename(dir), dir] as const))("%s declares what it imports, from lower layers only", (name, dir) => {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { dependencies?: Record<string, string> }
    const declared = new Set(Object.keys(manifest.dependencies ?? {}))
    const imports = importsOf(dir)
    imports.delete(name)
    const undeclared = [...imports].filter(([pkg]) => !declared.has(`@forkjoin/${pkg}`)).map(([pkg, file]) => `@forkjoin/${pkg} (${file})`)
    expect(undeclared, `add these to ${path.relative(projectRoot, dir)}/package.json's dependencies`).toEqual([])
    const upward = [...imports].filter(([pkg]) => layerOf(pkg) >= layerOf(name)).map(([pkg, file]) => `@forkjoin/${pkg} (${file})`)
    expect(upward, `${name} may import only lower layers`).toEqual([])
  })
})
