/**
 * Reading Node system errors (`ENOENT`, `EACCES`, `SQLITE_BUSY`, ...) without casts: the one
 * place that knows a thrown value may carry a string `code`, how such an error reads in a
 * message, and what a user can do about each code. Choosing the message around it is the
 * caller's.
 *
 * @since 0.1.0
 */

/**
 * The `code` of a thrown system error (`"ENOENT"`), or `undefined` when it has none.
 *
 * @category guards
 * @since 0.1.0
 */
export const errnoOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined

/**
 * A short description of a thrown value for messages: its code when it has one, else its
 * message, else its string form.
 *
 * @category constructors
 * @since 0.1.0
 */
export const describeError = (error: unknown): string =>
  errnoOf(error) ?? (error instanceof Error ? error.message : String(error))

/**
 * A thrown system error for a message: `CODE: detail` (Node's own message already starts
 * with its code, which is not repeated), its code alone, or the value's message or text.
 *
 * @category constructors
 * @since 0.1.0
 */
export const describeSystemError = (error: unknown): string => {
  const code = errnoOf(error)
  const message = typeof error === "object" && error !== null && "message" in error && typeof error.message === "string"
    ? error.message
    : undefined
  if (code === undefined) return message ?? String(error)
  if (message === undefined || message === "") return code
  return message.startsWith(`${code}:`) ? message : `${code}: ${message}`
}

// What a user can do about a system error, by code; a code without advice gets none rather
// than a guess (a name too long is not a permission problem).
const REMEDIES: ReadonlyMap<string, string> = new Map([
  ["ENAMETOOLONG", "a name on the path is too long for the filesystem; use a shorter name"],
  ["EACCES", "check the permissions of the file and its directories"],
  ["EPERM", "check the permissions of the file and its directories (and that none is immutable)"],
  ["EROFS", "the filesystem is mounted read-only; use a writable location"],
  ["ENOSPC", "the disk is full; free some space"],
  ["EDQUOT", "the disk quota is exhausted; free some space"],
  ["ELOOP", "the path goes through too many symbolic links (a loop?); fix the links"],
  ["EIO", "the disk reported an I/O error; check the device"],
  ["EBUSY", "the file is busy (in use by another process); retry when it is free"],
  ["EMFILE", "too many files are open; close some and retry"],
  ["ENFILE", "too many files are open system-wide; retry later"],
  ["EISDIR", "a directory is in the way; move it or use another path"],
  ["ENOTDIR", "a component of the path is not a directory; fix the path"],
  ["EXDEV", "the path crosses a filesystem boundary; keep the file on one filesystem"]
])

/**
 * What a user can do about a thrown system error, chosen by its code (`ENAMETOOLONG` →
 * "use a shorter name"); `undefined` for a value without a code or a code without advice.
 *
 * @category constructors
 * @since 0.1.0
 */
export const remedyOf = (error: unknown): string | undefined => {
  const code = errnoOf(error)
  return code === undefined ? undefined : REMEDIES.get(code)
}
