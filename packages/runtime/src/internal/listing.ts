/**
 * What the overlay and a direct session's view share about paths and listings: normalising a
 * path an action named, reading which directory `list_dir` asks for (the root included), the
 * entries of a shared directory read from the opened folder, and the visible, sorted result
 * (denied globs hidden).
 */
import { byCodeUnit, errnoOf, normalizeRelativePath, relativeUnder, remedyOf } from "@forkjoin/patch"
import { deniedByDefault } from "@forkjoin/patch/PathPolicy"
import { readCheckedDirectory } from "@forkjoin/patch/SafeRead"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
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

const kindOf = (e: fs.Dirent): DirEntry["kind"] =>
  e.isFile() ? "file" : e.isDirectory() ? "directory" : e.isSymbolicLink() ? "symlink" : "other"

const listError = (code: EngineError["code"], dir: string, message: string, cause?: unknown) =>
  new EngineError({ code, stage: Stage.resolve, paths: [dir === "" ? "." : dir], message, ...(cause === undefined ? {} : { cause }) })

/**
 * The entries of `dir` (workspace-relative, `""` = root) on disk with their kinds, read from
 * the opened folder (`readCheckedDirectory`): a folder swapped for a link after the caller's
 * check is refused (`stale_file`), and one that really lies outside the workspace
 * (`path_outside_roots`) or in a denied folder (`path_denied_by_policy`) is never listed.
 * Entries whose real path is denied are left out.
 */
export const readDirectory = (root: string, dir: string): Result.Result<Array<DirEntry>, EngineError> => {
  let under: string | undefined
  const read = readCheckedDirectory(dir === "" ? root : path.join(root, ...dir.split("/")), (landed) => {
    under = relativeUnder(root, landed)
    return under !== undefined && deniedByDefault(under) === undefined
  })
  const shown = dir === "" ? "." : dir
  if (Result.isSuccess(read)) {
    const prefix = under === undefined || under === "" ? "" : `${under}/`
    return Result.succeed(
      read.success.filter((e) => deniedByDefault(prefix + e.name) === undefined).map((e): DirEntry => ({ name: e.name, kind: kindOf(e) }))
    )
  }
  const refusal = read.failure
  switch (refusal._tag) {
    case "Replaced":
      return Result.fail(listError("stale_file", dir, `'${shown}' changed while it was being listed (${refusal.detail}): another process is replacing it; list it again once it settles.`))
    case "Refused":
      return Result.fail(
        under === undefined
          ? listError("path_outside_roots", dir, `'${shown}' led outside the workspace when it was opened (it or a folder on its path is a link); only folders inside the workspace can be listed.`)
          : listError("path_denied_by_policy", dir, `'${shown}' led into '${under}', which the workspace policy denies (forkjoin neither reads nor changes it); list folders outside it.`)
      )
    case "Failed":
      return Result.fail(
        listError("path_invalid", dir, `Cannot list '${shown}' (${errnoOf(refusal.error) ?? String(refusal.error)}); ${remedyOf(refusal.error) ?? "check the folder and its permissions"}.`, refusal.error)
      )
  }
}

/** The names of a listing below `dir` that no denied glob hides, sorted by code unit. */
export const visibleEntries = (
  names: ReadonlyMap<string, DirEntry["kind"]>,
  dir: string,
  denied: ReadonlyArray<RegExp>
): Array<DirEntry> => {
  const prefix = dir === "" ? "" : `${dir}/`
  return [...names]
    .filter(([name]) => deniedByDefault(prefix + name) === undefined && !denied.some((re) => re.test(prefix + name)))
    .map(([name, kind]): DirEntry => ({ name, kind }))
    .sort((a, b) => byCodeUnit(a.name, b.name))
}
