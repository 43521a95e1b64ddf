/**
 * Helpers for the `merge-file` and `merge-driver` tests: the built CLI run as an unprivileged
 * user (so a mode-000 file or a read-only folder is refused as it would be to a user, even when
 * the tests run as root) or with a file-size limit (so a write fails half-way with EFBIG), and
 * three-way fixtures.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { BIN, ROOT, type RunResult } from "./helpers.ts"

/** The uid/gid to drop to when the tests run as root (nobody), so permission bits apply. */
const NOBODY = 65534

/** True when this process runs as root: a permission test then runs the CLI as nobody. */
export const isRoot = (): boolean => process.getuid?.() === 0

/**
 * Runs the built CLI with `args`: as nobody when this process is root and `unprivileged` is
 * set; under `ulimit -f <blocks>` (512-byte blocks) when `fileSizeBlocks` is given.
 */
export const runMerge = (
  args: ReadonlyArray<string>,
  options: { readonly unprivileged?: boolean; readonly fileSizeBlocks?: number; readonly cwd?: string } = {}
): RunResult => {
  const { FORKJOIN_FAULT: _inherited, ...inherited } = process.env
  const command = options.fileSizeBlocks === undefined
    ? [process.execPath, BIN, ...args]
    : ["/bin/sh", "-c", `ulimit -f ${options.fileSizeBlocks}; exec "$0" "$@"`, process.execPath, BIN, ...args]
  const drop = options.unprivileged === true && isRoot() ? { uid: NOBODY, gid: NOBODY } : {}
  const r = spawnSync(command[0]!, command.slice(1), {
    cwd: options.cwd ?? ROOT,
    encoding: "utf8",
    input: "",
    // A regression that waits on a named pipe must fail the test, not hang it.
    timeout: 120_000,
    // SIGKILL: a CLI blocked in a system call never handles SIGTERM.
    killSignal: "SIGKILL",
    env: { ...inherited, NO_COLOR: "1", FORCE_COLOR: "0" },
    ...drop
  })
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr }
}

/** Lets nobody into `dir` (a test sandbox is created 0700 by root). */
export const openToAll = (dir: string): void => fs.chmodSync(dir, 0o755)

/** `lines` joined, each ending in a line feed. */
export const text = (...lines: ReadonlyArray<string>): string => lines.map((l) => `${l}\n`).join("")

/**
 * A base of `n` numbered lines and two sides that each change every `stride`-th line from
 * `first` on: with the same `first` they conflict on each changed line (n / stride conflicts,
 * a line apart), with different ones they merge cleanly.
 */
export const numbered = (n: number, edit?: { readonly first: number; readonly stride: number; readonly tag: string }): string =>
  Array.from({ length: n }, (_, i) => (edit !== undefined && i >= edit.first && (i - edit.first) % edit.stride === 0 ? `${edit.tag} ${i}\n` : `line ${i}\n`))
    .join("")

/** Writes the three sides into `dir` as `ours`, `base`, `theirs` (or the given names) and returns their paths. */
export const writeSides = (
  dir: string,
  sides: { readonly base: string | Uint8Array; readonly ours: string | Uint8Array; readonly theirs: string | Uint8Array },
  names: { readonly ours?: string; readonly base?: string; readonly theirs?: string } = {}
): { readonly ours: string; readonly base: string; readonly theirs: string } => {
  const at = { ours: path.join(dir, names.ours ?? "ours.txt"), base: path.join(dir, names.base ?? "base.txt"), theirs: path.join(dir, names.theirs ?? "theirs.txt") }
  fs.writeFileSync(at.base, sides.base)
  fs.writeFileSync(at.ours, sides.ours)
  fs.writeFileSync(at.theirs, sides.theirs)
  return at
}
