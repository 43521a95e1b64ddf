/**
 * Reading a workspace file that was just checked by name (`lstat`) without trusting the name
 * a second time: another process may swap the file, or a folder on its path, for a symbolic
 * link between the check and the read. The file is opened without following a final link
 * (`O_NOFOLLOW`) and without blocking (`O_NONBLOCK`: a named pipe swapped in cannot hang the
 * read), and the opened descriptor itself is verified: a regular file, the same device and
 * inode the check saw, and (where `/proc` exists) lying where the caller allows. This is the
 * one place that reads workspace files after a check: the engine's resolution, gap
 * detection and provider-aggregate verification all read through it.
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import { deniedByDefault } from "./PathPolicy.ts"
import { relativeUnder } from "./RelativePath.ts"
import { errnoOf } from "./SystemError.ts"

/**
 * Why a checked file was not read: the name no longer names the checked file (`Replaced`: a
 * link, another file or nothing is there now), the opened file lies where the caller does not
 * allow (`Refused`, with its real path), or the system refused the read (`Failed`).
 *
 * @category models
 * @since 0.1.0
 */
export type ReadRefusal =
  | { readonly _tag: "Replaced"; readonly detail: string }
  | { readonly _tag: "Refused"; readonly landed: string }
  | { readonly _tag: "Failed"; readonly error: unknown }

// Both flags are POSIX; where a platform lacks one it is 0 and the descriptor checks remain.
const OPEN_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0)

/**
 * What a file system entry is, in words for messages ("a folder", "a named pipe (FIFO)", ...):
 * the one wording every refusal of a non-regular file uses.
 *
 * @category formatting
 * @since 0.1.0
 */
export const describeEntry = (stat: fs.Stats): string =>
  stat.isFile()
    ? "a regular file"
    : stat.isDirectory()
    ? "a folder"
    : stat.isSymbolicLink()
    ? "a symbolic link"
    : stat.isFIFO()
    ? "a named pipe (FIFO)"
    : stat.isSocket()
    ? "a socket"
    : stat.isCharacterDevice()
    ? "a character device"
    : stat.isBlockDevice()
    ? "a block device"
    : "not a regular file"

/** Opens `absolute` with `flags`; a link, a non-folder on the way or nothing there now is `Replaced`. */
const openChecked = (absolute: string, flags: number): Result.Result<number, ReadRefusal> => {
  try {
    return Result.succeed(fs.openSync(absolute, flags))
  } catch (error) {
    const code = errnoOf(error)
    // ELOOP: a link is there now; ENOENT/ENOTDIR/ENXIO: the entry or a folder was swapped away
    // (ENOTDIR also: not a folder now, under O_DIRECTORY).
    if (code === "ELOOP" || code === "ENOENT" || code === "ENOTDIR" || code === "ENXIO") {
      return Result.fail({ _tag: "Replaced", detail: `opening it failed with ${code}` })
    }
    return Result.fail({ _tag: "Failed", error })
  }
}

let procFd: boolean | undefined
// Linux (and others with procfs) name what a descriptor really opened, folders swapped or not.
const hasProcFd = (): boolean => (procFd ??= fs.existsSync("/proc/self/fd"))

/**
 * Where the open descriptor `fd` (opened from `absolute`) really is: its `/proc/self/fd`
 * target where that exists, else the real path of `absolute` (without procfs, a folder
 * swapped after the open is caught only by the device and inode check).
 */
const landingOf = (fd: number, absolute: string): string =>
  hasProcFd() ? fs.readlinkSync(`/proc/self/fd/${fd}`) : fs.realpathSync(absolute)

/**
 * Reads the regular file at `absolute` that `checked` (its `lstat`) describes, verifying the
 * opened descriptor: a regular file with `checked`'s device and inode, whose real location
 * `allow` accepts (called before any byte is read). Never follows a final symbolic link.
 *
 * @category constructors
 * @since 0.1.0
 */
export const readCheckedFile = (
  absolute: string,
  checked: fs.Stats,
  allow: (landed: string) => boolean
): Result.Result<Uint8Array, ReadRefusal> => {
  const open = openChecked(absolute, OPEN_FLAGS)
  if (Result.isFailure(open)) return Result.fail(open.failure)
  const fd = open.success
  try {
    const opened = fs.fstatSync(fd)
    if (!opened.isFile()) return Result.fail({ _tag: "Replaced", detail: "it is no longer a regular file" })
    if (opened.dev !== checked.dev || opened.ino !== checked.ino) {
      return Result.fail({ _tag: "Replaced", detail: "another file is there now" })
    }
    const landed = landingOf(fd, absolute)
    if (!allow(landed)) return Result.fail({ _tag: "Refused", landed })
    return Result.succeed(fs.readFileSync(fd))
  } catch (error) {
    return Result.fail({ _tag: "Failed", error })
  } finally {
    fs.closeSync(fd)
  }
}

const DIRECTORY_FLAGS = OPEN_FLAGS | (fs.constants.O_DIRECTORY ?? 0)

/**
 * The entries (names and kinds) of the folder at `absolute`, read from the opened folder
 * itself: opened without following a final link, verified a folder whose real location
 * `allow` accepts, then listed through its descriptor (`/proc/self/fd`), so a name swapped for
 * a link after a check can never list another folder. Without procfs the folder is listed by
 * name and the name must still open the same device and inode afterwards.
 *
 * @category constructors
 * @since 0.1.0
 */
export const readCheckedDirectory = (
  absolute: string,
  allow: (landed: string) => boolean
): Result.Result<Array<fs.Dirent>, ReadRefusal> => {
  const open = openChecked(absolute, DIRECTORY_FLAGS)
  if (Result.isFailure(open)) return Result.fail(open.failure)
  const fd = open.success
  try {
    const opened = fs.fstatSync(fd)
    if (!opened.isDirectory()) return Result.fail({ _tag: "Replaced", detail: "it is no longer a folder" })
    const landed = landingOf(fd, absolute)
    if (!allow(landed)) return Result.fail({ _tag: "Refused", landed })
    if (hasProcFd()) return Result.succeed(fs.readdirSync(`/proc/self/fd/${fd}`, { withFileTypes: true }))
    const entries = fs.readdirSync(absolute, { withFileTypes: true })
    const after = fs.lstatSync(absolute)
    if (after.dev !== opened.dev || after.ino !== opened.ino) return Result.fail({ _tag: "Replaced", detail: "another folder is there now" })
    return Result.succeed(entries)
  } catch (error) {
    return Result.fail({ _tag: "Failed", error })
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * The regular file at the workspace-relative `rel` under `root` (a real path), read through
 * `readCheckedFile`, with its permission bits; `absent` when nothing is there; `unreadable`
 * for a path the default policy denies (never opened), anything but a regular file (a link
 * is never followed), or a file whose descriptor lands outside `root` or in a denied folder.
 *
 * @category constructors
 * @since 0.1.0
 */
export const readWorkspaceFile = (
  root: string,
  rel: string
): { readonly bytes: Uint8Array; readonly mode: number } | "absent" | "unreadable" => {
  if (deniedByDefault(rel) !== undefined) return "unreadable"
  const absolute = path.join(root, ...rel.split("/"))
  let checked: fs.Stats
  try {
    checked = fs.lstatSync(absolute)
  } catch {
    return "absent"
  }
  if (!checked.isFile()) return "unreadable"
  const read = readCheckedFile(absolute, checked, (landed) => {
    const under = relativeUnder(root, landed)
    return under !== undefined && deniedByDefault(under) === undefined
  })
  return Result.isSuccess(read) ? { bytes: read.success, mode: checked.mode & 0o7777 } : "unreadable"
}

/**
 * Why `readRegularFile` read nothing: nothing is there (`Missing`), or what is there is not a
 * regular file of at most the allowed size, or could not be read (`Refused`, in words).
 *
 * @category models
 * @since 0.1.0
 */
export type RegularFileRefusal =
  | { readonly _tag: "Missing" }
  | { readonly _tag: "Refused"; readonly detail: string }

/**
 * The bytes of the regular file at `absolute` (any location: artifacts, blobs), at most
 * `maxBytes` of them: a link is never followed, a named pipe or device never opened (both are
 * refused from `lstat`, and the open re-checks the descriptor), and the size is checked before
 * a byte is read.
 *
 * @category constructors
 * @since 0.1.0
 */
export const readRegularFile = (absolute: string, maxBytes: number): Result.Result<Uint8Array, RegularFileRefusal> => {
  let checked: fs.Stats | undefined
  try {
    checked = fs.lstatSync(absolute, { throwIfNoEntry: false })
  } catch (error) {
    return Result.fail({ _tag: "Refused", detail: `it cannot be inspected (${errnoOf(error) ?? String(error)})` })
  }
  if (checked === undefined) return Result.fail({ _tag: "Missing" })
  if (!checked.isFile()) return Result.fail({ _tag: "Refused", detail: `it is ${describeEntry(checked)}, not a regular file` })
  if (checked.size > maxBytes) return Result.fail({ _tag: "Refused", detail: `it is ${checked.size} bytes, above the limit of ${maxBytes}` })
  const read = readCheckedFile(absolute, checked, () => true)
  if (Result.isSuccess(read)) {
    // Grown since the check: refused as well, never more than the limit.
    return read.success.length > maxBytes
      ? Result.fail({ _tag: "Refused", detail: `it grew above the limit of ${maxBytes} bytes` })
      : Result.succeed(read.success)
  }
  const r = read.failure
  return Result.fail({
    _tag: "Refused",
    detail: r._tag === "Replaced" ? `it was replaced while being read (${r.detail})` : r._tag === "Refused" ? `it lies at ${r.landed}` : `reading it failed (${errnoOf(r.error) ?? String(r.error)})`
  })
}
