/**
 * Line diffs for the record-diff view: Myers' O(ND) algorithm over lines (after trimming the
 * common prefix and suffix), rendered as unified-diff hunks with 3 lines of context, within a
 * line and byte budget. Past `maxEdits` differences the diff degrades to one whole-file hunk
 * rather than spending quadratic time. Pure: no I/O.
 */

/** One line-level edit script entry. */
type Op = { readonly tag: "eq" | "del" | "add"; readonly line: string }

/** Splits text into lines without terminators; `finalNewline` says if the last line ended. */
export const splitLines = (text: string): { readonly lines: Array<string>; readonly finalNewline: boolean } => {
  if (text.length === 0) return { lines: [], finalNewline: true }
  const finalNewline = text.endsWith("\n")
  const lines = (finalNewline ? text.slice(0, -1) : text).split("\n")
  return { lines, finalNewline }
}

const myers = (a: ReadonlyArray<string>, b: ReadonlyArray<string>, maxEdits: number): Array<Op> | undefined => {
  const n = a.length
  const m = b.length
  const max = Math.min(n + m, maxEdits)
  const offset = max + 1
  let v = new Int32Array(2 * max + 3)
  const trace: Array<Int32Array> = []
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice())
    const next = v
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1
      let y = x - k
      while (x < n && y < m && a[x] === b[y]) {
        x++
        y++
      }
      next[offset + k] = x
      if (x >= n && y >= m) {
        trace.push(next.slice())
        return backtrack(a, b, trace, offset, d)
      }
    }
    v = next
  }
  return undefined
}

const backtrack = (
  a: ReadonlyArray<string>,
  b: ReadonlyArray<string>,
  trace: Array<Int32Array>,
  offset: number,
  dFinal: number
): Array<Op> => {
  const ops: Array<Op> = []
  let x = a.length
  let y = b.length
  for (let d = dFinal; d > 0; d--) {
    const v = trace[d]!
    const k = x - y
    const prevK = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? k + 1 : k - 1
    const prevX = v[offset + prevK]!
    const prevY = prevX - prevK
    while (x > prevX && y > prevY) {
      ops.push({ tag: "eq", line: a[--x]! })
      y--
    }
    if (x === prevX) ops.push({ tag: "add", line: b[--y]! })
    else ops.push({ tag: "del", line: a[--x]! })
  }
  while (x > 0 && y > 0) {
    ops.push({ tag: "eq", line: a[--x]! })
    y--
  }
  return ops.reverse()
}

/** The edit script from `a` to `b` (common prefix/suffix trimmed first; whole replacement past `maxEdits`). */
export const diffLines = (a: ReadonlyArray<string>, b: ReadonlyArray<string>, maxEdits = 4000): Array<Op> => {
  let start = 0
  while (start < a.length && start < b.length && a[start] === b[start]) start++
  let endA = a.length
  let endB = b.length
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--
    endB--
  }
  const midA = a.slice(start, endA)
  const midB = b.slice(start, endB)
  const mid = myers(midA, midB, maxEdits) ??
    [...midA.map((line): Op => ({ tag: "del", line })), ...midB.map((line): Op => ({ tag: "add", line }))]
  return [
    ...a.slice(0, start).map((line): Op => ({ tag: "eq", line })),
    ...mid,
    ...a.slice(endA).map((line): Op => ({ tag: "eq", line }))
  ]
}

/** The rendered diff of one file, with counts and whether the budget cut it. */
export interface RenderedDiff {
  readonly text: string
  readonly linesAdded: number
  readonly linesRemoved: number
  readonly linesUsed: number
  readonly bytesUsed: number
  readonly truncated: boolean
}

/** A line and byte allowance for rendering. */
export interface Budget {
  readonly lines: number
  readonly bytes: number
}

const NO_NEWLINE = "\\ No newline at end of file"

/**
 * Unified diff of two texts with headers `--- a/<from>` / `+++ b/<to>` (`/dev/null` for a
 * missing side), at most `budget.lines` lines and `budget.bytes` bytes of output.
 */
export const unifiedDiff = (
  from: { readonly name: string | undefined; readonly text: string | undefined },
  to: { readonly name: string | undefined; readonly text: string | undefined },
  budget: Budget,
  context = 3
): RenderedDiff => {
  const a = splitLines(from.text ?? "")
  const b = splitLines(to.text ?? "")
  const ops = diffLines(a.lines, b.lines)
  const out: Array<string> = []
  let linesAdded = 0
  let linesRemoved = 0
  for (const op of ops) {
    if (op.tag === "add") linesAdded++
    else if (op.tag === "del") linesRemoved++
  }
  const header = [
    `--- ${from.name === undefined ? "/dev/null" : `a/${from.name}`}`,
    `+++ ${to.name === undefined ? "/dev/null" : `b/${to.name}`}`
  ]
  // Index of the last line of each side, to place "\ No newline" markers.
  const lastA = a.lines.length - 1
  const lastB = b.lines.length - 1
  const changed = ops.map((op) => op.tag !== "eq")
  let i = 0
  let ia = 0
  let ib = 0
  const hunks: Array<Array<string>> = []
  while (i < ops.length) {
    if (!changed[i]) {
      if (ops[i]!.tag !== "add") ia++
      if (ops[i]!.tag !== "del") ib++
      i++
      continue
    }
    // Start a hunk `context` lines back.
    let s = i
    let sa = ia
    let sb = ib
    for (let c = 0; c < context && s > 0 && !changed[s - 1]; c++) {
      s--
      sa--
      sb--
    }
    let e = i
    let lastChange = i
    while (e < ops.length) {
      if (changed[e]) lastChange = e
      else if (e - lastChange > 2 * context) break
      e++
    }
    const end = Math.min(ops.length, lastChange + context + 1)
    const lines: Array<string> = []
    let na = 0
    let nb = 0
    let pa = sa
    let pb = sb
    for (let j = s; j < end; j++) {
      const op = ops[j]!
      if (op.tag === "eq") {
        lines.push(` ${op.line}`)
        if (pa === lastA && !a.finalNewline) lines.push(NO_NEWLINE)
        na++
        nb++
        pa++
        pb++
      } else if (op.tag === "del") {
        lines.push(`-${op.line}`)
        if (pa === lastA && !a.finalNewline) lines.push(NO_NEWLINE)
        na++
        pa++
      } else {
        lines.push(`+${op.line}`)
        if (pb === lastB && !b.finalNewline) lines.push(NO_NEWLINE)
        nb++
        pb++
      }
    }
    const range = (start: number, count: number) => `${count === 0 ? start : start + 1}${count === 1 ? "" : `,${count}`}`
    hunks.push([`@@ -${range(sa, na)} +${range(sb, nb)} @@`, ...lines])
    ia = pa
    ib = pb
    i = end
  }
  for (const h of hunks) out.push(...h)
  // Apply the budget line by line (headers included).
  const all = [...header, ...out]
  let bytes = 0
  let used = 0
  for (const line of all) {
    const size = Buffer.byteLength(line) + 1
    if (used + 1 > budget.lines || bytes + size > budget.bytes) break
    bytes += size
    used++
  }
  const truncated = used < all.length
  return {
    text: all.slice(0, used).map((l) => `${l}\n`).join(""),
    linesAdded,
    linesRemoved,
    linesUsed: used,
    bytesUsed: bytes,
    truncated
  }
}
