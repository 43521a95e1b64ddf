/**
 * The one mapping from a path a caller named (a view request, a provider event) to the
 * workspace-relative path history stores, or a typed refusal. An absolute path is accepted
 * when it lies strictly inside the workspace root; a relative path must already be in stored
 * form, except that `..` pops the previous segment (the product-wide rule of
 * `@forkjoin/patch/RelativePath`) and a `..` with nothing to pop is refused.
 *
 * It owns the decision only. It does not own the wording of a refusal (each caller says it
 * in its own error) nor resolving symlinks (history names paths, it does not follow them).
 */
import { normalizePath, relativeUnder } from "@forkjoin/patch/RelativePath"
import { RelativePath } from "@forkjoin/schema"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as path from "node:path"

/**
 * Why a requested path names nothing in the workspace: nothing was named (`empty`), an
 * absolute path with no known root (`absolute_without_root`), an absolute path not strictly
 * below the root (`outside_workspace`), a `..` that leaves the workspace (`escaping`), or a
 * relative path that is not in stored form (`not_normalized`: `//`, `.`, backslashes, ...).
 */
export type PathRefusal = "empty" | "absolute_without_root" | "outside_workspace" | "escaping" | "not_normalized"

const isRelativePath = Schema.is(RelativePath)

/**
 * The workspace-relative path `raw` names under `root` (a real path), or why it names none.
 * `raw` is `unknown` because view requests arrive from untyped callers (the CLI, JS users).
 */
export const workspacePathOf = (root: string | undefined, raw: unknown): Result.Result<RelativePath, PathRefusal> => {
  if (typeof raw !== "string" || raw.length === 0) return Result.fail("empty")
  let relative = raw
  if (path.isAbsolute(raw) || raw.startsWith("/")) {
    if (root === undefined) return Result.fail("absolute_without_root")
    const under = relativeUnder(root, path.resolve(raw))
    // The root itself is a directory, never a file with history.
    if (under === undefined || under === "") return Result.fail("outside_workspace")
    relative = under
  }
  if (relative.split("/").includes("..")) {
    const normalized = normalizePath(relative)
    if (Result.isSuccess(normalized)) return Result.succeed(normalized.success)
    return Result.fail(normalized.failure === "escaping_path" ? "escaping" : "not_normalized")
  }
  return isRelativePath(relative) ? Result.succeed(relative) : Result.fail("not_normalized")
}
