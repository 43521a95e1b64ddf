/**
 * What the overlay and a direct session's view share about paths and listings: normalising a
 * path an action named, reading which directory `list_dir` asks for (the root included), the
 * kinds of a shared directory's entries, and the visible, sorted result (denied globs hidden).
 */
import { byCodeUnit, normalizeRelativePath } from "@forkjoin/patch"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import type { DirEntry } from "../Overlay.ts"

/** `normalizeRelativePath` as an Effect. */
export const normalize = (raw: string) => {
  const r = normalizeRelativePath(raw)
  return Result.isSuccess(r) ? Effect.succeed(r.success) : Effect.fail(r.failure)
}

/** The directory `list_dir` names: `""` for the root (`""`, `"."`, `"./"`), else the normalized path. */
export const listedDirectory = (raw: string) => {
  const slashed = raw.replace(/\\/g, "/")
  const isRoot = !slashed.startsWith("/") && slashed.split("/").every((s) => s === "" || s === ".")
  return isRoot ? Effect.succeed("") : normalize(raw)
}

/** The entries of `dir` (workspace-relative, `""` = root) on disk with their kinds; throws the system error. */
export const readDirectory = (root: string, dir: string): Array<DirEntry> =>
  fs.readdirSync(path.join(root, dir), { withFileTypes: true }).map((e): DirEntry => ({
    name: e.name,
    kind: e.isFile() ? "file" : e.isDirectory() ? "directory" : e.isSymbolicLink() ? "symlink" : "other"
  }))

/** The names of a listing below `dir` that no denied glob hides, sorted by code unit. */
export const visibleEntries = (
  names: ReadonlyMap<string, DirEntry["kind"]>,
  dir: string,
  denied: ReadonlyArray<RegExp>
): Array<DirEntry> => {
  const prefix = dir === "" ? "" : `${dir}/`
  return [...names]
    .filter(([name]) => !denied.some((re) => re.test(prefix + name)))
    .map(([name, kind]): DirEntry => ({ name, kind }))
    .sort((a, b) => byCodeUnit(a.name, b.name))
}
