/**
 * Pure normalization of the relative paths a patch names. It owns the lexical rules only
 * (separators, `.`/`..`, control characters); resolving symlinks and roots is the engine's job.
 *
 * @since 0.1.0
 */
import { EngineError } from "@forkjoin/schema/EngineError"
import * as Result from "effect/Result"

// Control characters (C0, DEL, C1) never belong in a path a model wrote and break terminals and logs.
const CONTROL = /[\u0000-\u001F\u007F-\u009F]/

/**
 * Normalizes a workspace-relative path to POSIX form (`a/b.txt`): backslashes become `/`,
 * `.` and empty segments drop, `..` pops. Absolute or escaping paths are `path_outside_roots`;
 * empty paths or control characters are `path_invalid`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const normalizeRelativePath = (raw: string): Result.Result<string, EngineError> => {
  if (CONTROL.test(raw)) {
    return Result.fail(
      new EngineError({
        code: "path_invalid",
        stage: 3,
        paths: [JSON.stringify(raw).slice(1, -1)],
        message: `Path ${JSON.stringify(raw)} contains a NUL or control character; use a plain relative path.`
      })
    )
  }
  const slashed = raw.replace(/\\/g, "/")
  if (slashed.startsWith("/") || /^[A-Za-z]:/.test(slashed)) {
    return Result.fail(
      new EngineError({
        code: "path_outside_roots",
        stage: 3,
        paths: [raw],
        message: `Path '${raw}' is absolute; write paths relative to the workspace root.`
      })
    )
  }
  const out: Array<string> = []
  for (const segment of slashed.split("/")) {
    if (segment === "" || segment === ".") continue
    if (segment === "..") {
      if (out.length === 0) {
        return Result.fail(
          new EngineError({
            code: "path_outside_roots",
            stage: 3,
            paths: [raw],
            message: `Path '${raw}' escapes the workspace with '..'; write paths inside the workspace.`
          })
        )
      }
      out.pop()
      continue
    }
    out.push(segment)
  }
  if (out.length === 0) {
    return Result.fail(
      new EngineError({
        code: "path_invalid",
        stage: 3,
        paths: [raw],
        message: `Path '${raw}' names no file; give a file path relative to the workspace root.`
      })
    )
  }
  return Result.succeed(out.join("/"))
}
