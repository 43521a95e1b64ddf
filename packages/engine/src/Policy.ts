/**
 * The engine's file policy vocabulary, shared with every view that must hide exactly what the
 * engine refuses (overlay listings, history views): default denied globs and the glob matcher.
 * It also owns the rule for forkjoin's own state folder (`<workspace>/.forkjoin`): a real
 * folder inside the workspace, never a link, so history and lock databases are never created
 * wherever a link points. It does not own resolving request paths (that is stage 3).
 *
 * @since 0.1.0
 */
import { errnoOf } from "@forkjoin/patch/SystemError"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * The default denied globs (`.git` and `.forkjoin` at any depth) and the glob matcher: one
 * definition in `@forkjoin/patch/PathPolicy`, which history ingestion and gap detection use too.
 *
 * @category constants
 * @since 0.1.0
 */
export { compileGlob, DEFAULT_DENIED_GLOBS, deniedByDefault } from "@forkjoin/patch/PathPolicy"

/**
 * The name of forkjoin's state folder at the workspace root (history, lock, run artifacts).
 *
 * @category constants
 * @since 0.1.0
 */
export const STATE_DIRECTORY = ".forkjoin"

// `*` also ignores this file itself, so `git status` shows nothing of the folder.
const GITIGNORE = "# forkjoin's own state (history, locks, run artifacts): never commit it.\n*\n"

// The rule itself is policy; a folder the system will not let us create or read is `path_invalid`
// (as an unopenable workspace root is).
const refuse = (rel: string, message: string, cause?: unknown, code: "path_denied_by_policy" | "path_invalid" = "path_denied_by_policy") =>
  new EngineError({ code, stage: Stage.resolve, paths: [rel], message, ...(cause === undefined ? {} : { cause }) })

/**
 * Checks (and creates when missing) the state folder `dir`, named `rel` in messages: it must be
 * a real directory holding no symbolic link. A new (or still empty) folder gets a `.gitignore`
 * of `*`, so `git status` stays clean. Refusals are `path_denied_by_policy` at stage 3
 * (opening the workspace); a folder that cannot be created or read is `path_invalid`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const openStateFolder = (dir: string, rel: string = STATE_DIRECTORY): Result.Result<string, EngineError> => {
  try {
    return checkStateFolder(dir, rel)
  } catch (error) {
    return Result.fail(refuse(rel, `Cannot inspect forkjoin's state folder '${dir}' (${errnoOf(error) ?? String(error)}); check its permissions.`, error, "path_invalid"))
  }
}

const checkStateFolder = (dir: string, rel: string): Result.Result<string, EngineError> => {
  try {
    fs.mkdirSync(dir)
  } catch (error) {
    // EEXIST: it is already there (or another process just made it); checked below either way.
    if (errnoOf(error) !== "EEXIST") {
      return Result.fail(refuse(rel, `Cannot create forkjoin's state folder '${dir}' (${errnoOf(error) ?? String(error)}); make the workspace writable.`, error, "path_invalid"))
    }
  }
  const stat = fs.lstatSync(dir, { throwIfNoEntry: false })
  if (stat === undefined || stat.isSymbolicLink()) {
    let target = "a missing target"
    try {
      target = `'${fs.readlinkSync(dir)}'`
    } catch {
      // gone meanwhile: the generic wording is enough
    }
    return Result.fail(refuse(
      rel,
      `'${rel}' is a symbolic link (to ${target}); forkjoin keeps its history and locks only in a real folder ` +
        `inside the workspace. Replace the link with a real folder (move its contents in if they are this workspace's ` +
        `history); to keep the history database elsewhere, pass its path explicitly (--db).`
    ))
  }
  if (!stat.isDirectory()) {
    return Result.fail(refuse(
      rel,
      `'${rel}' is not a folder; forkjoin keeps its history and locks in the folder '${rel}'. Move or rename that file, then retry.`
    ))
  }
  let entries: Array<fs.Dirent>
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true })
  } catch (error) {
    return Result.fail(refuse(rel, `Cannot read forkjoin's state folder '${dir}' (${errnoOf(error) ?? String(error)}); check its permissions.`, error, "path_invalid"))
  }
  const link = entries.find((e) => e.isSymbolicLink())
  if (link !== undefined) {
    return Result.fail(refuse(
      `${rel}/${link.name}`,
      `'${rel}/${link.name}' is a symbolic link; forkjoin never writes its state through a link. Remove it (move what it ` +
        `points to into '${rel}' if it is this workspace's state), then retry.`
    ))
  }
  // Only into a new folder: a user who removed or edited it keeps their choice.
  if (entries.length === 0) {
    try {
      fs.writeFileSync(path.join(dir, ".gitignore"), GITIGNORE, { flag: "wx" })
    } catch {
      // Only keeps `git status` clean: never a reason to refuse the workspace.
    }
  }
  return Result.succeed(dir)
}

/**
 * `openStateFolder` for the workspace whose real path is `root`: `<root>/.forkjoin`. Call it
 * before opening anything inside it (the history database, the lock, run directories).
 *
 * @category constructors
 * @since 0.1.0
 */
export const openStateDirectory = (root: string): Result.Result<string, EngineError> =>
  openStateFolder(path.join(root, STATE_DIRECTORY))
