/**
 * The peer: OpenAI Codex CLI's native `apply_patch`, pinned to one version.
 *
 * `@openai/codex` is installed on demand into `.bench-cache/codex/` with npm. Its JS wrapper
 * only forwards to a native binary shipped in a platform package (an optional dependency
 * aliased as `@openai/codex-<os>-<arch>`) at `vendor/<target triple>/bin/codex`. That binary
 * behaves as the standalone `apply_patch` tool when its argv0 is `apply_patch`, so we
 * symlink `.bench-cache/codex/bin/apply_patch` to it and invoke the symlink directly
 * (patch on stdin, or as argv[1], cwd = the workspace).
 */
import { spawnSync } from "node:child_process"
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, unlinkSync } from "node:fs"
import os from "node:os"
import path from "node:path"

/** The pinned peer version. */
export const CODEX_VERSION = "0.171.0"

/** Display name of the peer in figures. */
export const CODEX_PEER_NAME = `codex apply_patch ${CODEX_VERSION}`

/** A usable peer: the `apply_patch` symlink and the native binary it points to. */
export interface CodexPeer {
  readonly _tag: "Available"
  readonly applyPatch: string
  readonly nativeBinary: string
  readonly version: string
}

/** Why the peer could not be made available (the bench reports this as `peerError`). */
export interface CodexUnavailable {
  readonly _tag: "Unavailable"
  readonly error: string
}

const TRIPLES: Readonly<Record<string, { readonly triple: string; readonly pkg: string }>> = {
  "linux-x64": { triple: "x86_64-unknown-linux-musl", pkg: "@openai/codex-linux-x64" },
  "linux-arm64": { triple: "aarch64-unknown-linux-musl", pkg: "@openai/codex-linux-arm64" },
  "android-x64": { triple: "x86_64-unknown-linux-musl", pkg: "@openai/codex-linux-x64" },
  "android-arm64": { triple: "aarch64-unknown-linux-musl", pkg: "@openai/codex-linux-arm64" },
  "darwin-x64": { triple: "x86_64-apple-darwin", pkg: "@openai/codex-darwin-x64" },
  "darwin-arm64": { triple: "aarch64-apple-darwin", pkg: "@openai/codex-darwin-arm64" },
  "win32-x64": { triple: "x86_64-pc-windows-msvc", pkg: "@openai/codex-win32-x64" },
  "win32-arm64": { triple: "aarch64-pc-windows-msvc", pkg: "@openai/codex-win32-arm64" }
}

/** The install prefix of the peer under the repository root. */
export const codexPrefix = (root: string): string => path.join(root, ".bench-cache", "codex")

/** Path of the native Codex binary inside the install prefix for this platform, or an error. */
export const nativeBinaryPath = (prefix: string): string | { readonly error: string } => {
  const entry = TRIPLES[`${process.platform}-${process.arch}`]
  if (entry === undefined) return { error: `no Codex native package for ${process.platform}-${process.arch}` }
  const exe = process.platform === "win32" ? "codex.exe" : "codex"
  const candidates = [
    path.join(prefix, "node_modules", ...entry.pkg.split("/"), "vendor", entry.triple, "bin", exe),
    // older layouts shipped vendor/ inside the main package
    path.join(prefix, "node_modules", "@openai", "codex", "vendor", entry.triple, "bin", exe),
    path.join(prefix, "node_modules", "@openai", "codex", "vendor", entry.triple, "codex", exe)
  ]
  const found = candidates.find((c) => existsSync(c))
  return found ?? { error: `native Codex binary not found; looked at:\n  ${candidates.join("\n  ")}` }
}

const installedVersion = (prefix: string): string | undefined => {
  try {
    const pkg = JSON.parse(readFileSync(path.join(prefix, "node_modules", "@openai", "codex", "package.json"), "utf8")) as { version?: unknown }
    return typeof pkg.version === "string" ? pkg.version : undefined
  } catch {
    return undefined
  }
}

const install = (prefix: string): string | undefined => {
  mkdirSync(prefix, { recursive: true })
  const npmArgs = ["install", "--prefix", prefix, `@openai/codex@${CODEX_VERSION}`, "--no-save", "--no-audit", "--no-fund", "--no-package-lock", "--loglevel=error"]
  // Prefer the npm that launched us (npm run bench), else `npm` on PATH.
  const npmCli = process.env["npm_execpath"]
  const r =
    npmCli !== undefined && npmCli.endsWith(".js") && existsSync(npmCli)
      ? spawnSync(process.execPath, [npmCli, ...npmArgs], { encoding: "utf8", timeout: 300_000 })
      : spawnSync(process.platform === "win32" ? "npm.cmd" : "npm", npmArgs, { encoding: "utf8", timeout: 300_000 })
  if (r.error) return `npm install failed to start: ${r.error.message}`
  if (r.status !== 0) return `npm install @openai/codex@${CODEX_VERSION} exited ${String(r.status)}: ${(r.stderr || r.stdout || "").trim().slice(0, 1500)}`
  return undefined
}

const linkApplyPatch = (prefix: string, nativeBinary: string): string => {
  const binDir = path.join(prefix, "bin")
  mkdirSync(binDir, { recursive: true })
  const link = path.join(binDir, process.platform === "win32" ? "apply_patch.exe" : "apply_patch")
  try {
    if (lstatSync(link).isSymbolicLink() && readlinkSync(link) === nativeBinary) return link
    unlinkSync(link)
  } catch {
    // no previous link
  }
  // Build the link beside the final name and rename it over, so a concurrent bench never sees it missing.
  const tmpLink = `${link}.${process.pid}.tmp`
  rmSync(tmpLink, { force: true })
  symlinkSync(nativeBinary, tmpLink)
  renameSync(tmpLink, link)
  return link
}

/** Applies a tiny Add File patch with `applyPatch` in a temp dir; returns an error message or undefined when it works. */
export const verifyApplyPatch = (applyPatch: string): string | undefined => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "forkjoin-codex-verify-"))
  try {
    const patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    const r = spawnSync(applyPatch, [], { cwd: dir, input: patch, encoding: "utf8", timeout: 30_000 })
    if (r.error) return `verification run failed: ${r.error.message}`
    if (r.status !== 0) return `verification exited ${String(r.status)}: ${(r.stderr || r.stdout || "").trim().slice(0, 500)}`
    const target = path.join(dir, "a.txt")
    if (!existsSync(target)) return `verification: a.txt was not created (stdout: ${r.stdout.trim().slice(0, 200)})`
    const content = readFileSync(target, "utf8")
    if (content !== "hi\n") return `verification: a.txt has ${JSON.stringify(content)}, expected "hi\\n"`
    return undefined
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Makes the peer available: reuses `.bench-cache/codex/bin/apply_patch` when it verifies,
 * otherwise installs `@openai/codex@0.171.0` with npm, links it and verifies it. Never throws.
 */
export const ensureCodex = (root: string, log: (message: string) => void = () => {}): CodexPeer | CodexUnavailable => {
  try {
    const prefix = codexPrefix(root)
    const attempt = (): CodexPeer | CodexUnavailable => {
      const native = nativeBinaryPath(prefix)
      if (typeof native !== "string") return { _tag: "Unavailable", error: native.error }
      const link = linkApplyPatch(prefix, native)
      const bad = verifyApplyPatch(link)
      if (bad !== undefined) return { _tag: "Unavailable", error: bad }
      return { _tag: "Available", applyPatch: link, nativeBinary: native, version: installedVersion(prefix) ?? "unknown" }
    }
    if (installedVersion(prefix) === CODEX_VERSION) {
      const cached = attempt()
      if (cached._tag === "Available") return cached
      log(`cached Codex unusable (${cached.error}); reinstalling`)
    }
    log(`installing @openai/codex@${CODEX_VERSION} into ${path.relative(root, prefix)} ...`)
    const failed = install(prefix)
    if (failed !== undefined) return { _tag: "Unavailable", error: failed }
    if (installedVersion(prefix) !== CODEX_VERSION) {
      return { _tag: "Unavailable", error: `after install, @openai/codex version is ${installedVersion(prefix) ?? "missing"}, expected ${CODEX_VERSION}` }
    }
    return attempt()
  } catch (e) {
    return { _tag: "Unavailable", error: `unexpected: ${e instanceof Error ? e.message : String(e)}` }
  }
}
