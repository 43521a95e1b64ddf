/**
 * The facts of the filesystem holding a folder (SPEC §7, §8): its type, whether a rename over an
 * existing file is atomic, whether fsync of a file and of its directory succeed, case
 * sensitivity and symlink support. Checked for real, in one temporary folder
 * (`<dir>/.forkjoin/fs-probe-<random>`) that is always removed; a few milliseconds, so the gate
 * can run it on every call. `sameKind` says which facts differ between two filesystems.
 *
 * Does not own what differences mean (the gate decides) nor the probe's scenarios.
 *
 * @since 0.1.0
 */
import { describeSystemError, remedyOf } from "@forkjoin/patch/SystemError"
import type { FilesystemFacts } from "@forkjoin/schema/Evidence"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { AutonomyError } from "./AutonomyError.ts"

// Linux superblock magic numbers (statfs f_type), from linux/magic.h and the filesystems' sources.
const LINUX_TYPES: ReadonlyMap<number, string> = new Map([
  [0xef53, "ext4"], // ext2, ext3 and ext4 share it
  [0x01021994, "tmpfs"],
  [0x9123683e, "btrfs"],
  [0x58465342, "xfs"],
  [0x794c7630, "overlayfs"],
  [0x2fc12fc1, "zfs"],
  [0x6969, "nfs"],
  [0x65735546, "fuse"],
  [0x5346544e, "ntfs"],
  [0xf2f52010, "f2fs"],
  [0x73717368, "squashfs"],
  [0x2011bab0, "exfat"],
  [0x4d44, "vfat"],
  [0x482b, "hfsplus"],
  [0xff534d42, "cifs"],
  [0xfe534d42, "smb2"],
  [0x01021997, "9p"],
  [0x858458f6, "ramfs"],
  [0xca451a4e, "bcachefs"],
  [0x52654973, "reiserfs"],
  [0x3153464a, "jfs"],
  [0xf15f, "ecryptfs"],
  [0x61756673, "aufs"],
  [0x00c36400, "ceph"],
  [0x47504653, "gpfs"],
  [0x0bd00bd0, "lustre"]
])

/**
 * The name of a filesystem type as `statfs` reports it: the Linux name for a known magic
 * number, `unknown:0x…` for another; on other platforms (whose numbers are not stable names)
 * `<platform>:0x…`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const typeName = (type: number, platform: NodeJS.Platform = process.platform): string => {
  const magic = type >>> 0
  const hex = `0x${magic.toString(16)}`
  if (platform !== "linux") return `${platform}:${hex}`
  return LINUX_TYPES.get(magic) ?? `unknown:${hex}`
}

const attempt = (check: () => boolean): boolean => {
  try {
    return check()
  } catch {
    return false
  }
}

const typeOf = (dir: string): string => {
  try {
    return typeName(fs.statfsSync(dir).type)
  } catch {
    return `${process.platform}:unknown`
  }
}

// A rename over an existing file replaces it in one step: the target holds the new bytes, the source is gone.
const checkAtomicRename = (work: string): boolean =>
  attempt(() => {
    const target = path.join(work, "rename-target")
    const source = path.join(work, "rename-source")
    fs.writeFileSync(target, "old")
    fs.writeFileSync(source, "new")
    fs.renameSync(source, target)
    return fs.readFileSync(target, "utf8") === "new" && !fs.existsSync(source)
  })

const checkFsync = (work: string): boolean =>
  attempt(() => {
    const file = path.join(work, "fsync")
    const fd = fs.openSync(file, "w")
    try {
      fs.writeSync(fd, "fsync")
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
    // Directory fsync makes the new entry durable; some platforms cannot open a directory for it.
    const dirFd = fs.openSync(work, "r")
    try {
      fs.fsyncSync(dirFd)
    } finally {
      fs.closeSync(dirFd)
    }
    return true
  })

const checkCaseSensitive = (work: string): boolean =>
  attempt(() => {
    fs.writeFileSync(path.join(work, "case-probe"), "lower")
    return !fs.existsSync(path.join(work, "CASE-PROBE"))
  })

const checkSymlinks = (work: string): boolean =>
  attempt(() => {
    fs.writeFileSync(path.join(work, "link-target"), "target")
    const link = path.join(work, "link")
    fs.symlinkSync("link-target", link)
    return fs.lstatSync(link).isSymbolicLink() && fs.readlinkSync(link) === "link-target" &&
      fs.readFileSync(link, "utf8") === "target"
  })

/**
 * Checks the filesystem holding `dir` (which must exist and be writable): creates
 * `<dir>/.forkjoin/fs-probe-<random>` (and `.forkjoin` when missing), runs each check there and
 * removes what it created. Throws `AutonomyError` (`filesystem_unprobeable`) only when the probe
 * folder cannot be created; a check that fails reports `false`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const factsOf = (dir: string): FilesystemFacts => {
  const root = path.resolve(dir)
  const parent = path.join(root, ".forkjoin")
  const createdParent = !fs.existsSync(parent)
  const work = path.join(parent, `fs-probe-${randomBytes(6).toString("hex")}`)
  try {
    fs.mkdirSync(work, { recursive: true })
  } catch (cause) {
    const remedy = remedyOf(cause)
    throw new AutonomyError({
      code: "filesystem_unprobeable",
      paths: [work],
      message: `Cannot create ${work} to check the filesystem (${describeSystemError(cause)})` +
        `${remedy === undefined ? "" : `; ${remedy}`}. The folder must exist and be writable.`,
      cause
    })
  }
  try {
    return {
      type: typeOf(work),
      atomicRename: checkAtomicRename(work),
      fsyncHonoured: checkFsync(work),
      caseSensitive: checkCaseSensitive(work),
      symlinks: checkSymlinks(work)
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
    if (createdParent) {
      // Only when empty: something else may have started using it meanwhile.
      try {
        fs.rmdirSync(parent)
      } catch {
        // not empty or already gone: left as is
      }
    }
  }
}

/**
 * The names of the facts that differ between two filesystems (empty: the same kind).
 *
 * @category combinators
 * @since 0.1.0
 */
export const sameKind = (a: FilesystemFacts, b: FilesystemFacts): ReadonlyArray<keyof FilesystemFacts> =>
  (["type", "atomicRename", "fsyncHonoured", "caseSensitive", "symlinks"] as const).filter((k) => a[k] !== b[k])
