/**
 * The edits between two versions of a text, line by line, in the form tree-sitter's
 * incremental parse wants them (`Tree.edit`), so a tree of the old text can be reused for the
 * new one. Pure.
 */
import { diffLines } from "./diff3.ts"

/** A row and a column (UTF-16 code units) of a text. */
export interface Point {
  readonly row: number
  readonly column: number
}

/** One edit: `[startIndex, oldEndIndex)` of the text became `[startIndex, newEndIndex)`. */
export interface LineEdit {
  readonly startIndex: number
  readonly oldEndIndex: number
  readonly newEndIndex: number
  readonly startPosition: Point
  readonly oldEndPosition: Point
  readonly newEndPosition: Point
}

// Each line with its line ending; a last line without one is its own line.
const linesOf = (text: string): Array<string> => {
  const lines: Array<string> = []
  let at = 0
  while (at < text.length) {
    const end = text.indexOf("\n", at)
    const next = end === -1 ? text.length : end + 1
    lines.push(text.slice(at, next))
    at = next
  }
  return lines
}

const offsetsOf = (lines: ReadonlyArray<string>): Array<number> => {
  const offsets = [0]
  for (const line of lines) offsets.push(offsets[offsets.length - 1]! + line.length)
  return offsets
}

/**
 * The edits that turn `before` into `after`, line by line, in order, each in the coordinates
 * of the text with the edits before it applied (tree-sitter's `Tree.edit`). Offsets and columns
 * are UTF-16 code units, as web-tree-sitter counts them for a string input; a position is a
 * line's start except at the end of a text that has no final newline.
 */
export const editsBetween = (before: string, after: string): Array<LineEdit> => {
  const a = linesOf(before)
  const b = linesOf(after)
  const ao = offsetsOf(a)
  const bo = offsetsOf(b)
  // A point at line `row` of `lines` (`row` may be the end), in rows counted from `base`.
  const point = (lines: ReadonlyArray<string>, row: number, base: number): Point => {
    const last = lines[lines.length - 1]
    if (row === lines.length && last !== undefined && !last.endsWith("\n")) return { row: base + row - 1, column: last.length }
    return { row: base + row, column: 0 }
  }
  return diffLines(a, b).map((h) => {
    const shift = h.xStart - h.oStart
    return {
      startIndex: bo[h.xStart]!,
      oldEndIndex: bo[h.xStart]! + ao[h.oStart + h.oLength]! - ao[h.oStart]!,
      newEndIndex: bo[h.xStart + h.xLength]!,
      startPosition: point(b, h.xStart, 0),
      oldEndPosition: point(a, h.oStart + h.oLength, shift),
      newEndPosition: point(b, h.xStart + h.xLength, 0)
    }
  })
}
