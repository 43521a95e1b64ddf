/**
 * Computes an updated file's new text from its chunks, in three line models:
 * - `legacy` (Codex default): split on LF only; matched blocks are replaced by the patch's
 *   lines (context included, CRs lost), the result always ends with one LF;
 * - `codexPreserve` (Codex's opt-in PreserveLineEndings): per-line endings, context lines kept
 *   verbatim, inserted lines take the first-seen ending, every line gets an ending;
 * - `native`: as codexPreserve, plus BOM kept, final-newline state kept, replaced lines keep
 *   the ending of the line they replace, ambiguity rejected, pure additions after `@@` anchor there.
 */
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Result from "effect/Result"
import type { ChunkLine, UpdateChunk } from "../Parser.ts"
import { type LineSource, Matcher, passNames } from "./matcher.ts"

/** Which line model to apply. */
export type LineMode = "legacy" | "codexPreserve" | "native"

/**
 * A file split into lines without allocating a string per line: start offsets and lengths
 * into the text, and ending codes (0 none, 1 LF, 2 CRLF, 3 CR). Legacy mode keeps CRs in the
 * line text (it splits on LF only).
 */
interface Lines extends LineSource {
  readonly ends: Uint8Array
}

interface Replacement {
  readonly start: number
  readonly oldLen: number
  readonly ops: ReadonlyArray<ChunkLine>
}

const ENDINGS = ["", "\n", "\r\n", "\r"] as const

const splitLines = (text: string, legacy: boolean): Lines => {
  // Typed arrays grown by doubling: no per-line allocation, no boxed number arrays.
  let cap = Math.max(16, text.length >> 5)
  let offsets = new Int32Array(cap)
  let lens = new Int32Array(cap)
  let ends = new Uint8Array(cap)
  let n = 0
  const push = (offset: number, len: number, ending: number) => {
    if (n === cap) {
      cap *= 2
      const o = new Int32Array(cap)
      o.set(offsets)
      offsets = o
      const l = new Int32Array(cap)
      l.set(lens)
      lens = l
      const e = new Uint8Array(cap)
      e.set(ends)
      ends = e
    }
    offsets[n] = offset
    lens[n] = len
    ends[n] = ending
    n++
  }
  let pos = 0
  if (legacy || text.indexOf("\r") === -1) {
    // Legacy splits on LF only (CRs stay in the text); LF-only files take the same fast path.
    let nl: number
    while ((nl = text.indexOf("\n", pos)) !== -1) {
      push(pos, nl - pos, 1)
      pos = nl + 1
    }
  } else {
    const re = /\r\n|\n|\r/g
    let m: RegExpExecArray | null
    while ((m = re.exec(text)) !== null) {
      push(pos, m.index - pos, m[0] === "\n" ? 1 : m[0] === "\r\n" ? 2 : 3)
      pos = m.index + m[0].length
    }
  }
  if (pos < text.length) push(pos, text.length - pos, 0)
  return { text, n, offsets: offsets.subarray(0, n), lens: lens.subarray(0, n), ends: ends.subarray(0, n) }
}

const lineText = (lines: LineSource, i: number): string =>
  lines.text.slice(lines.offsets[i]!, lines.offsets[i]! + lines.lens[i]!)

const MAX_CANDIDATES = 10

const oldOf = (ops: ReadonlyArray<ChunkLine>): Array<string> => ops.filter((l) => l.op !== "+").map((l) => l.text)

/** Upstream's retry: drop a trailing empty old line (and a trailing empty new line), exactly. */
const dropTrailingBlank = (ops: ReadonlyArray<ChunkLine>): Array<ChunkLine> => {
  let oldLast = -1
  let newLast = -1
  ops.forEach((l, i) => {
    if (l.op !== "+") oldLast = i
    if (l.op !== "-") newLast = i
  })
  const dropNew = newLast >= 0 && ops[newLast]!.text === "" ? newLast : -1
  const out: Array<ChunkLine> = []
  ops.forEach((l, i) => {
    if (i === oldLast && i === dropNew) return
    if (i === oldLast) {
      if (l.op === " ") out.push({ op: "+", text: l.text })
      return
    }
    if (i === dropNew) {
      if (l.op === " ") out.push({ op: "-", text: l.text })
      return
    }
    out.push(l)
  })
  return out
}

/**
 * Applies `chunks` to `text` (already decoded; BOM handling is the caller's). Returns the
 * new text or a `context_not_found` / `ambiguous_context` error naming `path`.
 */
export const applyChunks = (
  path: string,
  text: string,
  chunks: ReadonlyArray<UpdateChunk>,
  mode: LineMode
): Result.Result<string, EngineError> => {
  const lines = splitLines(text, mode === "legacy")
  const n = lines.n
  // One search per context line and per chunk (a retry aside).
  const matcher = new Matcher(lines, chunks.reduce((sum, chunk) => sum + chunk.contexts.length + 1, 0))
  const native = mode === "native"
  const limit = native ? MAX_CANDIDATES : 1
  const reps: Array<Replacement> = []
  let cursor = 0
  const ambiguous = (what: string, positions: ReadonlyArray<number>, pass: number) =>
    Result.fail(
      new EngineError({
        code: "ambiguous_context",
        stage: Stage.plan,
        paths: [path],
        candidates: positions.map((p) => p + 1),
        message: `Ambiguous context in ${path}: ${what} matches at lines ${
          positions.map((p) => p + 1).join(", ")
        }${positions.length >= MAX_CANDIDATES ? " (and maybe more)" : ""} (${
          passNames[pass]
        } pass). Add surrounding context lines or an '@@ <line>' header so exactly one place matches.`
      })
    )
  for (const chunk of chunks) {
    for (let c = 0; c < chunk.contexts.length; c++) {
      const ctx = chunk.contexts[c]!
      const found = matcher.find([ctx], cursor, false, limit)
      if (found === undefined) {
        return Result.fail(
          new EngineError({
            code: "context_not_found",
            stage: Stage.plan,
            paths: [path],
            message: `Failed to find context '${ctx}' in ${path}`
          })
        )
      }
      const pureAddition = chunk.lines.every((l) => l.op === "+")
      if (native && pureAddition && !chunk.endOfFile && c === chunk.contexts.length - 1 && found.positions.length > 1) {
        return ambiguous(`the insertion anchor '@@ ${ctx}'`, found.positions, found.pass)
      }
      cursor = found.positions[0]! + 1
    }
    let ops = chunk.lines
    if (ops.every((l) => l.op === "+")) {
      // Codex inserts pure additions at end of file (before one trailing blank line), whatever the
      // `@@` header says (openai/codex#30946). native anchors them right after the header instead.
      const eofIndex = n > 0 && lines.lens[n - 1] === 0 ? n - 1 : n
      const anchored = native && chunk.contexts.length > 0 && !chunk.endOfFile
      reps.push({ start: anchored ? cursor : eofIndex, oldLen: 0, ops })
      continue
    }
    let pattern = oldOf(ops)
    let found = matcher.find(pattern, cursor, chunk.endOfFile, limit)
    if (found === undefined && pattern[pattern.length - 1] === "") {
      ops = dropTrailingBlank(ops)
      pattern = oldOf(ops)
      found = matcher.find(pattern, cursor, chunk.endOfFile, limit)
    }
    if (found === undefined) {
      return Result.fail(
        new EngineError({
          code: "context_not_found",
          stage: Stage.plan,
          paths: [path],
          message: `Failed to find expected lines in ${path}:\n${oldOf(chunk.lines).join("\n")}`
        })
      )
    }
    if (native && found.positions.length > 1) return ambiguous("the chunk", found.positions, found.pass)
    const start = found.positions[0]!
    reps.push({ start, oldLen: pattern.length, ops })
    cursor = start + pattern.length
  }
  return Result.succeed(render(lines, reps, mode, text))
}

const dominantEnding = (ends: Uint8Array): string => {
  const counts = [0, 0, 0, 0]
  for (let i = 0; i < ends.length; i++) counts[ends[i]!]!++
  const [, lf, crlf, cr] = counts as [number, number, number, number]
  return crlf > lf && crlf >= cr ? "\r\n" : cr > lf && cr > crlf ? "\r" : "\n"
}

/** Builds the output from string pieces; untouched runs are copied as one slice of the original. */
const render = (lines: Lines, reps: ReadonlyArray<Replacement>, mode: LineMode, text: string): string => {
  const { ends, offsets } = lines
  const n = lines.n
  const sorted = reps.map((r, i) => ({ r, i })).sort((a, b) => a.r.start - b.r.start || a.i - b.i).map((x) => x.r)
  let first = 0
  for (let i = 0; i < n; i++) {
    if (ends[i] !== 0) {
      first = ends[i]!
      break
    }
  }
  const fallback: string = mode === "native" ? dominantEnding(ends) : ENDINGS[first === 0 ? 1 : first]!
  const legacy = mode === "legacy"
  const pieces: Array<string> = []
  // Only the original last line can lack an ending; it waits here until we know whether it stays last.
  let pending: string | undefined
  let lastText: string | undefined
  let emitted = 0
  const push = (s: string) => {
    if (pending !== undefined) {
      pieces.push(pending + fallback)
      pending = undefined
    }
    pieces.push(s)
  }
  const emitLine = (t: string, ending: string) => {
    emitted++
    lastText = t
    if (legacy) push(t + "\n")
    else if (ending === "") {
      if (pending !== undefined) push("")
      pending = t
    } else push(t + ending)
  }
  const emitRange = (a: number, b: number) => {
    if (a >= b) return
    if (b === n && ends[n - 1] === 0) {
      if (a < n - 1) emitRangeWhole(a, n - 1)
      emitLine(lineText(lines, n - 1), "")
    } else emitRangeWhole(a, b)
  }
  const emitRangeWhole = (a: number, b: number) => {
    emitted += b - a
    lastText = lines.lens[b - 1] === 0 ? "" : "x"
    push(text.slice(offsets[a]!, offsets[b]!))
  }
  const emitReplacement = (rep: Replacement) => {
    if (legacy) {
      for (const op of rep.ops) if (op.op !== "-") emitLine(op.text, "\n")
      return
    }
    let f = rep.start
    // Endings of the lines removed in the current run, so replacing lines can inherit them (native).
    const removed: Array<number> = []
    let used = 0
    for (const op of rep.ops) {
      if (op.op === " ") {
        emitLine(lineText(lines, f), ENDINGS[ends[f]!]!)
        f++
        removed.length = 0
        used = 0
      } else if (op.op === "-") {
        removed.push(ends[f]!)
        f++
      } else {
        let ending: string = fallback
        if (mode === "native") {
          const inherited = removed[used++]
          const prev = f > 0 ? ends[f - 1]! : 0
          if (inherited !== undefined && inherited !== 0) ending = ENDINGS[inherited]!
          else if (prev !== 0) ending = ENDINGS[prev]!
        }
        emitLine(op.text, ending)
      }
    }
  }
  let pos = 0
  let overlapping = false
  for (const rep of sorted) {
    if (rep.start < pos) {
      overlapping = true
      break
    }
    emitRange(pos, rep.start)
    emitReplacement(rep)
    pos = rep.start + rep.oldLen
  }
  if (overlapping) return renderBySplicing(lines, sorted, mode, fallback)
  emitRange(pos, n)
  if (legacy) {
    // Codex joins the lines with LF and appends one only when the last line is not empty.
    const s = pieces.join("")
    if (emitted > 0 && lastText === "") return s.slice(0, -1)
    return s
  }
  if (mode === "codexPreserve") {
    if (pending !== undefined) pieces.push(pending + fallback)
    return pieces.join("")
  }
  // native: the last line keeps the file's final-newline state.
  const hadFinalNewline = text.length === 0 || ends[n - 1] !== 0
  if (pending !== undefined) {
    pieces.push(hadFinalNewline ? pending + fallback : pending)
    return pieces.join("")
  }
  const s = pieces.join("")
  if (hadFinalNewline) return s
  return s.endsWith("\r\n") ? s.slice(0, -2) : s.endsWith("\n") || s.endsWith("\r") ? s.slice(0, -1) : s
}

/** Rare (an End-of-File chunk anchored before the cursor): upstream's bottom-up splices, line by line. */
const renderBySplicing = (
  lines: Lines,
  sorted: ReadonlyArray<Replacement>,
  mode: LineMode,
  fallback: string
): string => {
  const out: Array<{ t: string; e: string }> = Array.from({ length: lines.n }, (_, i) => ({
    t: lineText(lines, i),
    e: ENDINGS[lines.ends[i]!]!
  }))
  for (let k = sorted.length - 1; k >= 0; k--) {
    const rep = sorted[k]!
    const seg: Array<{ t: string; e: string }> = []
    let f = rep.start
    for (const op of rep.ops) {
      if (op.op === "-") f++
      else if (op.op === " " && mode !== "legacy") seg.push(out[f++] ?? { t: op.text, e: fallback })
      else {
        if (op.op === " ") f++
        seg.push({ t: op.text, e: fallback })
      }
    }
    out.splice(rep.start, rep.oldLen, ...seg)
  }
  if (mode === "legacy") {
    const texts = out.map((l) => l.t)
    if (texts.length === 0 || texts[texts.length - 1] !== "") texts.push("")
    return texts.join("\n")
  }
  return out.map((l, i) => l.t + (l.e === "" && (mode === "codexPreserve" || i < out.length - 1) ? fallback : l.e)).join("")
}
