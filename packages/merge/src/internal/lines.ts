/**
 * Text sides for the line merge: decoding (binary and BOM facts come from `@forkjoin/patch/TextInfo`,
 * the one definition snapshots use too), splitting into lines that keep their own terminators,
 * and the dominant line ending. Does not merge anything.
 */
import { decodeUtf8, describeText } from "@forkjoin/patch/TextInfo"
import { isUtf8 } from "node:buffer"

/** One side as text: whether it starts with a UTF-8 BOM, and its lines after the BOM. */
export interface TextSide {
  readonly bom: boolean
  readonly lines: ReadonlyArray<string>
}

/** The side as lines, or `undefined` when it is binary (a NUL byte, or not UTF-8). */
export const textSide = (bytes: Uint8Array): TextSide | undefined => {
  const info = describeText(bytes, isUtf8)
  if (info.encoding === "binary") return undefined
  const bom = info.encoding === "utf8-bom"
  const text = decodeUtf8(bom ? bytes.subarray(3) : bytes)
  return text === undefined ? undefined : { bom, lines: splitLines(text) }
}

/**
 * Splits text into lines, each with its own terminator (`"\n"`, `"\r\n"` or a lone `"\r"`);
 * the last line has none when the text does not end with one. `""` has no lines.
 */
export const splitLines = (text: string): Array<string> => {
  const lines: Array<string> = []
  // Most text has no CR: native `indexOf` scans for LF only.
  if (text.indexOf("\r") === -1) {
    let start = 0
    for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", start)) {
      lines.push(text.slice(start, nl + 1))
      start = nl + 1
    }
    if (start < text.length) lines.push(text.slice(start))
    return lines
  }
  let start = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 10 || c === 13) {
      if (c === 13 && text.charCodeAt(i + 1) === 10) i++
      lines.push(text.slice(start, i + 1))
      start = i + 1
    }
  }
  if (start < text.length) lines.push(text.slice(start))
  return lines
}

/** The terminator of a line: `"\r\n"`, `"\n"`, `"\r"`, or `""` for a last line without one. */
export const endingOf = (line: string): string =>
  line.endsWith("\r\n") ? "\r\n" : line.endsWith("\n") ? "\n" : line.endsWith("\r") ? "\r" : ""

/**
 * The most frequent terminator of the first side that has any (ties prefer `"\n"`, then
 * `"\r\n"`); `"\n"` when no side has one.
 */
export const dominantEnding = (sides: ReadonlyArray<ReadonlyArray<string>>): string => {
  for (const lines of sides) {
    let lf = 0
    let crlf = 0
    let cr = 0
    for (const line of lines) {
      const e = endingOf(line)
      if (e === "\n") lf++
      else if (e === "\r\n") crlf++
      else if (e === "\r") cr++
    }
    if (lf + crlf + cr === 0) continue
    return lf >= crlf && lf >= cr ? "\n" : crlf >= cr ? "\r\n" : "\r"
  }
  return "\n"
}
