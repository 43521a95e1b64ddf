/**
 * The running build's engine fingerprint (SPEC §7, §8): the package version, the digest of the
 * scenario catalogue and a digest of every package's source files. The bundle gets the version
 * and the source digest from the build (`__FORKJOIN_VERSION__`, `__FORKJOIN_SOURCE_DIGEST__`), so
 * the gate never hashes sources there; from source they are read from the repository, giving
 * the same values, so evidence is portable between the two.
 *
 * Imports only node:fs, node:path, node:url and the `sha256` helper (plus the catalogue), so
 * `scripts/build.mjs` can bundle this module alone to compute the digest it defines.
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import type { EngineFingerprint } from "@forkjoin/schema/Evidence"
import type { Sha256Hash } from "@forkjoin/schema/Ids"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { scenarioSetDigest } from "./Scenarios.ts"

declare const __FORKJOIN_VERSION__: string | undefined
declare const __FORKJOIN_SOURCE_DIGEST__: string | undefined

const collect = (root: string, dir: string, out: Array<string>): void => {
  let entries: Array<fs.Dirent>
  try {
    entries = fs.readdirSync(path.join(root, dir), { withFileTypes: true })
  } catch {
    return
  }
  for (const entry of entries) {
    const rel = `${dir}/${entry.name}`
    if (entry.isDirectory()) collect(root, rel, out)
    else if (entry.isFile() && entry.name.endsWith(".ts")) out.push(rel)
  }
}

/**
 * The source digest of a checkout: sha256 over the sorted relative paths (with `/`) of every
 * `.ts` file under `packages/<name>/src/` and `probes/src/`, each with the sha256 of its bytes.
 *
 * @category constructors
 * @since 0.1.0
 */
export const sourceDigestOf = (repoRoot: string): Sha256Hash => {
  const files: Array<string> = []
  let packages: Array<fs.Dirent> = []
  try {
    packages = fs.readdirSync(path.join(repoRoot, "packages"), { withFileTypes: true })
  } catch {
    // no packages folder: only probes count
  }
  for (const p of packages) if (p.isDirectory()) collect(repoRoot, `packages/${p.name}/src`, files)
  collect(repoRoot, "probes/src", files)
  files.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  const manifest = files.map((rel) => `${rel}\u0000${sha256(fs.readFileSync(path.join(repoRoot, rel)))}\n`).join("")
  return sha256(manifest)
}

const isForkjoinRoot = (dir: string): boolean => {
  try {
    const pkg: unknown = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"))
    return typeof pkg === "object" && pkg !== null && "name" in pkg && pkg.name === "@forkjoin/forkjoin"
  } catch {
    return false
  }
}

/**
 * The forkjoin repository root above `start` (or `start` itself): the nearest folder whose
 * package.json is named `@forkjoin/forkjoin`; `undefined` when there is none.
 *
 * @category constructors
 * @since 0.1.0
 */
export const repoRootOf = (start: string): string | undefined => {
  let dir = path.resolve(start)
  for (;;) {
    if (isForkjoinRoot(dir)) return dir
    const up = path.dirname(dir)
    if (up === dir) return undefined
    dir = up
  }
}

// Where this module runs from: its own file (source, ESM bundles), the bench root the bench
// runner passes, or the script node was started with (the CommonJS bundle has no import.meta.url).
const findRoot = (): string => {
  const starts: Array<string> = []
  const url: unknown = import.meta.url
  if (typeof url === "string" && url.startsWith("file:")) starts.push(path.dirname(fileURLToPath(url)))
  const benchRoot = process.env["FORKJOIN_BENCH_ROOT"]
  if (benchRoot !== undefined && benchRoot !== "") starts.push(benchRoot)
  if (process.argv[1] !== undefined) starts.push(path.dirname(path.resolve(process.argv[1])))
  for (const start of starts) {
    const root = repoRootOf(start)
    if (root !== undefined) return root
  }
  throw new Error(
    `cannot find the forkjoin sources to fingerprint this build (looked above ${starts.join(", ")}); ` +
      "run forkjoin from its repository or from the built bundle (npm run build)."
  )
}

let memo: EngineFingerprint | undefined

/**
 * The running build's fingerprint, computed once per process. Throws (an `Error` naming where it
 * looked) when running from source and the repository cannot be found.
 *
 * @category constructors
 * @since 0.1.0
 */
export const current = (): EngineFingerprint => {
  if (memo !== undefined) return memo
  const bundledVersion = typeof __FORKJOIN_VERSION__ === "string" ? __FORKJOIN_VERSION__ : undefined
  const bundledDigest = typeof __FORKJOIN_SOURCE_DIGEST__ === "string" && /^sha256:[0-9a-f]{64}$/.test(__FORKJOIN_SOURCE_DIGEST__)
    ? __FORKJOIN_SOURCE_DIGEST__
    : undefined
  let root: string | undefined
  const rootOnce = (): string => (root ??= findRoot())
  const version = bundledVersion ?? readVersion(rootOnce())
  // The define is a plain string, checked above to have the form sourceDigestOf returns.
  const sourceDigest = bundledDigest !== undefined ? (bundledDigest as Sha256Hash) : sourceDigestOf(rootOnce())
  memo = { version, scenarioSetDigest, sourceDigest }
  return memo
}

const readVersion = (root: string): string => {
  const pkg: unknown = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"))
  return typeof pkg === "object" && pkg !== null && "version" in pkg && typeof pkg.version === "string" ? pkg.version : "0.0.0"
}
