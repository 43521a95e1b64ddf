/**
 * `mergeText` over any `Diff3`, so the bench can run the same merge on each library: the
 * byte-level shortcuts, the binary check, the BOM bit, encoding the result and rendering a
 * conflict with markers. The public entry point (and its model) is `TextMerge.ts`.
 */
import { sameBytes } from "@forkjoin/patch/Bytes"
import type { ConflictHunk } from "@forkjoin/schema/Conflict"
import type { MarkerLabels, TextMerge, TheirsTaken } from "../TextMerge.ts"
import type { Block, Diff3 } from "./diff3.ts"
import { dominantEnding, endingOf, textSide } from "./lines.ts"

const BOM = "\uFEFF"
const encoder = new TextEncoder()

/** The library's labels, git's own words for the three sides. */
export const defaultLabels: MarkerLabels = { ours: "ours", base: "base", theirs: "theirs" }

// A label is part of one marker line: a line break (or any control character) in it would
// forge marker or content lines, so each run of them becomes one space.
/** One marker line: the marker and its label made one line (an empty label leaves the bare marker). */
export const markerLine = (marker: string, label: string): string => {
  const oneLine = label.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, " ").trim()
  return oneLine === "" ? marker : `${marker} ${oneLine}`
}

/** The whole file with git-style diff3 markers; a marker never shares a line with content. */
const render = (blocks: ReadonlyArray<Block>, bom: boolean, eol: string, labels: MarkerLabels): string => {
  const parts: Array<string> = bom ? [BOM] : []
  let open = false
  const lines = (xs: ReadonlyArray<string>) => {
    for (const x of xs) parts.push(x)
    if (xs.length > 0) open = endingOf(xs[xs.length - 1]!) === ""
  }
  const marker = (m: string) => {
    // A side whose last line has no terminator (end of file) still gets the marker on its own line.
    if (open) parts.push(eol)
    parts.push(m, eol)
    open = false
  }
  const oursLine = markerLine("<<<<<<<", labels.ours)
  const baseLine = markerLine("|||||||", labels.base)
  const theirsLine = markerLine(">>>>>>>", labels.theirs)
  for (const block of blocks) {
    if (block._tag === "Ok") lines(block.lines)
    else {
      marker(oursLine)
      lines(block.ours)
      marker(baseLine)
      lines(block.base)
      marker("=======")
      lines(block.theirs)
      marker(theirsLine)
    }
  }
  return parts.join("")
}

/**
 * `base → theirs` onto `ours` where every conflicting region takes theirs (see
 * `TextMerge.takeTheirs`): the same blocks as the merge, the conflicts returned as hunks.
 */
export const takeTheirsWith = (diff3: Diff3) => (base: Uint8Array, ours: Uint8Array, theirs: Uint8Array): TheirsTaken => {
  if (sameBytes(ours, base) || sameBytes(ours, theirs)) return { _tag: "Merged", bytes: theirs, taken: [] }
  if (sameBytes(theirs, base)) return { _tag: "Merged", bytes: ours, taken: [] }
  const b = textSide(base)
  const o = textSide(ours)
  const t = textSide(theirs)
  if (b === undefined || o === undefined || t === undefined) return { _tag: "Binary" }
  const bom = o.bom === b.bom ? t.bom : o.bom
  const taken: Array<ConflictHunk> = []
  const merged: Array<string> = bom ? [BOM] : []
  for (const block of diff3(b.lines, o.lines, t.lines)) {
    if (block._tag === "Ok") for (const line of block.lines) merged.push(line)
    else {
      taken.push({ baseStart: block.baseIndex + 1, base: block.base, ours: block.ours, theirs: block.theirs })
      for (const line of block.theirs) merged.push(line)
    }
  }
  return { _tag: "Merged", bytes: encoder.encode(merged.join("")), taken }
}

/** The text merge with `diff3` as the line merge (see `TextMerge.mergeText`). */
export const mergeTextWith = (diff3: Diff3) =>
(base: Uint8Array, ours: Uint8Array, theirs: Uint8Array, labels: MarkerLabels = defaultLabels): TextMerge => {
  if (sameBytes(ours, base)) return { _tag: "Merged", bytes: theirs, bothChanged: false }
  if (sameBytes(theirs, base)) return { _tag: "Merged", bytes: ours, bothChanged: false }
  if (sameBytes(ours, theirs)) return { _tag: "Merged", bytes: ours, bothChanged: true }
  const b = textSide(base)
  const o = textSide(ours)
  const t = textSide(theirs)
  if (b === undefined || o === undefined || t === undefined) return { _tag: "Binary" }
  // A one-bit three-way merge cannot conflict: if both sides changed the bit, they agree.
  const bom = o.bom === b.bom ? t.bom : o.bom
  const blocks = diff3(b.lines, o.lines, t.lines)
  const hunks: Array<ConflictHunk> = []
  for (const block of blocks) {
    if (block._tag === "Conflict") {
      hunks.push({ baseStart: block.baseIndex + 1, base: block.base, ours: block.ours, theirs: block.theirs })
    }
  }
  if (hunks.length > 0) {
    return { _tag: "Conflict", hunks, text: render(blocks, bom, dominantEnding([o.lines, t.lines, b.lines]), labels) }
  }
  const merged: Array<string> = bom ? [BOM] : []
  for (const block of blocks) if (block._tag === "Ok") for (const line of block.lines) merged.push(line)
  return { _tag: "Merged", bytes: encoder.encode(merged.join("")), bothChanged: true }
}
