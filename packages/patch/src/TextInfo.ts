/**
 * Pure facts about file bytes that snapshots record and the planner relies on: encoding
 * (UTF-8, UTF-8 with BOM, binary), line-ending style and final-newline state.
 *
 * @since 0.1.0
 */
import { byteView } from "./Bytes.ts"

/**
 * Snapshot text facts of SPEC §4.2 (hash, size and mode are added by the engine).
 *
 * @category models
 * @since 0.1.0
 */
export interface TextInfo {
  readonly encoding: "utf8" | "utf8-bom" | "binary"
  readonly lineEnding: "lf" | "crlf" | "mixed" | "none"
  readonly finalNewline: boolean
}

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/**
 * Decodes strict UTF-8, keeping a BOM as U+FEFF (as Rust does); `undefined` when not UTF-8.
 *
 * @category constructors
 * @since 0.1.0
 */
export const decodeUtf8 = (bytes: Uint8Array): string | undefined => {
  try {
    return decoder.decode(bytes)
  } catch {
    return undefined
  }
}

/**
 * True when the bytes start with the UTF-8 byte order mark.
 *
 * @category guards
 * @since 0.1.0
 */
export const hasBom = (bytes: Uint8Array): boolean =>
  bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf

/**
 * Binary means: not valid UTF-8, or containing a NUL byte (git's heuristic, on the whole file).
 *
 * @category guards
 * @since 0.1.0
 */
export const isBinary = (bytes: Uint8Array): boolean => byteView(bytes).indexOf(0) !== -1 || decodeUtf8(bytes) === undefined

const countByte = (view: Buffer, byte: number): number => {
  let n = 0
  for (let i = view.indexOf(byte); i !== -1; i = view.indexOf(byte, i + 1)) n++
  return n
}

const countCrlf = (view: Buffer): number => {
  let n = 0
  for (let i = view.indexOf(0x0d); i !== -1; i = view.indexOf(0x0d, i + 1)) if (view[i + 1] === 0x0a) n++
  return n
}

/**
 * Describes encoding, line endings and final newline of file bytes. `isUtf8` may be a faster
 * platform check (e.g. Node's `buffer.isUtf8`); the default decodes strictly.
 *
 * @category constructors
 * @since 0.1.0
 */
export const describeText = (
  bytes: Uint8Array,
  isUtf8: (bytes: Uint8Array) => boolean = (b) => decodeUtf8(b) !== undefined
): TextInfo => {
  const view = byteView(bytes)
  const binary = view.indexOf(0) !== -1 || !isUtf8(bytes)
  if (binary) return { encoding: "binary", lineEnding: "none", finalNewline: false }
  // Most files have no CR at all: one native scan decides, counting is only for CR files.
  const anyCr = view.indexOf(0x0d) !== -1
  const crlf = anyCr ? countCrlf(view) : 0
  const lf = anyCr ? countByte(view, 0x0a) - crlf : view.indexOf(0x0a) !== -1 ? 1 : 0
  const cr = anyCr ? countByte(view, 0x0d) - crlf : 0
  const kinds = (lf > 0 ? 1 : 0) + (crlf > 0 ? 1 : 0) + (cr > 0 ? 1 : 0)
  const lineEnding = kinds === 0 ? "none" : kinds > 1 || cr > 0 ? "mixed" : crlf > 0 ? "crlf" : "lf"
  const last = bytes[bytes.length - 1]
  return {
    encoding: hasBom(bytes) ? "utf8-bom" : "utf8",
    lineEnding,
    finalNewline: last === 0x0a || last === 0x0d
  }
}
