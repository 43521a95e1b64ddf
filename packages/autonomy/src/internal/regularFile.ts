/**
 * Reading a small file that must be a regular file (evidence, keys) without ever blocking on
 * what stands in its place: the path is looked at (`lstat`, then `stat` through a link) before
 * it is opened, a named pipe, device, socket or folder is refused unopened, the open is
 * non-blocking (a file swapped for a pipe meanwhile cannot hang it), the open descriptor is
 * checked again (`fstat`), and at most `maxBytes` are read.
 */
import { Buffer } from "node:buffer"
import { describeEntry } from "@forkjoin/patch/SafeRead"
import * as fs from "node:fs"

/**
 * What reading found: `Missing`, `NotRegular` (what it is instead), `TooLarge` (its size),
 * `Failed` (the system error), or the `Text` (UTF-8).
 */
export type RegularRead =
  | { readonly _tag: "Missing" }
  | { readonly _tag: "NotRegular"; readonly kind: string }
  | { readonly _tag: "TooLarge"; readonly size: number }
  | { readonly _tag: "Failed"; readonly cause: unknown }
  | { readonly _tag: "Text"; readonly text: string }

const judge = (stat: fs.Stats, maxBytes: number): RegularRead | undefined =>
  !stat.isFile()
    ? { _tag: "NotRegular", kind: describeEntry(stat) }
    : stat.size > maxBytes
    ? { _tag: "TooLarge", size: stat.size }
    : undefined

// O_NONBLOCK: opening a pipe without a writer returns at once instead of waiting for one;
// O_NOCTTY: a terminal device never becomes this process's controlling terminal.
const OPEN_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0) | (fs.constants.O_NOCTTY ?? 0)

/** Reads `file` when it is a regular file of at most `maxBytes` bytes (links followed). Never throws. */
export const readRegularFile = (file: string, maxBytes: number): RegularRead => {
  let fd: number
  try {
    const link = fs.lstatSync(file, { throwIfNoEntry: false })
    if (link === undefined) return { _tag: "Missing" }
    const target = link.isSymbolicLink() ? fs.statSync(file, { throwIfNoEntry: false }) : link
    if (target === undefined) return { _tag: "Missing" }
    const refused = judge(target, maxBytes)
    if (refused !== undefined) return refused
    fd = fs.openSync(file, OPEN_FLAGS)
  } catch (cause) {
    return { _tag: "Failed", cause }
  }
  try {
    // The entry may have been replaced between the look and the open: the descriptor decides.
    const stat = fs.fstatSync(fd)
    const refused = judge(stat, maxBytes)
    if (refused !== undefined) return refused
    // One byte more than the size tells a file that grew meanwhile (up to the cap) from one that did not.
    let buffer = Buffer.alloc(stat.size + 1)
    let length = 0
    for (;;) {
      if (length === buffer.length) {
        if (length > maxBytes) return { _tag: "TooLarge", size: length }
        const grown = Buffer.alloc(Math.min(maxBytes + 1, length * 2))
        buffer.copy(grown)
        buffer = grown
      }
      const n = fs.readSync(fd, buffer, length, buffer.length - length, null)
      if (n === 0) break
      length += n
    }
    if (length > maxBytes) return { _tag: "TooLarge", size: length }
    return { _tag: "Text", text: buffer.subarray(0, length).toString("utf8") }
  } catch (cause) {
    return { _tag: "Failed", cause }
  } finally {
    fs.closeSync(fd)
  }
}
