/**
 * Deterministic workload of the `format` bench: a large, realistic-looking source file and a
 * patch of many one-line update chunks (3 context lines, `-old`, `+new`, 3 context lines),
 * in file order and spread evenly, plus the exact bytes applying it must produce.
 */

/** A seeded 32-bit PRNG (mulberry32) returning floats in [0, 1). */
export const mulberry32 = (seed: number): (() => number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const WORDS = [
  "user", "order", "item", "cart", "price", "total", "count", "index", "buffer", "stream", "token", "session",
  "config", "option", "value", "result", "error", "state", "cache", "entry", "node", "edge", "graph", "queue",
  "task", "job", "worker", "pool", "request", "response", "header", "body", "path", "file", "line", "column",
  "range", "span", "scope", "frame", "event", "handler", "listener", "timer", "delay", "limit", "offset", "size",
  "width", "height", "color", "style", "layout", "view", "model", "record", "field", "schema", "query", "filter",
  "sort", "page", "cursor", "batch", "chunk", "patch", "diff", "hash", "key", "id", "name", "label", "title"
] as const
const VERBS = [
  "get", "set", "load", "save", "parse", "format", "compute", "resolve", "build", "create", "update", "remove",
  "merge", "split", "apply", "check", "validate", "encode", "decode", "render", "flush", "emit", "collect", "find"
] as const
const TYPES = ["string", "number", "boolean", "Uint8Array", "ReadonlyArray<string>", "Map<string, number>", "Date", "unknown"] as const
const OPS = ["+", "-", "*", "%", "<<", "&", "|", "^"] as const
const CMP = ["<", ">", "<=", ">=", "===", "!=="] as const
const COMMENT = [
  "keep the fast path first", "callers rely on this ordering", "see the spec for the edge cases", "normalize before comparing",
  "this must stay allocation free", "guard against overflow", "reuse the previous buffer", "the cursor only moves forward",
  "empty input is valid here", "retry once on conflict", "matches the upstream behaviour", "TODO: measure this again"
] as const

/** The generated workload. */
export interface FormatWorkload {
  /** Relative path used in the patch. */
  readonly path: string
  readonly original: string
  readonly patch: string
  readonly expected: string
  readonly lineCount: number
  readonly chunkCount: number
}

/** Builds the workload deterministically from `seed`: `lines` file lines, `chunks` evenly spread one-line update chunks. */
export const makeFormatWorkload = (seed: number, lines: number, chunks: number, path = "src/big.ts"): FormatWorkload => {
  const rnd = mulberry32(seed)
  const int = (n: number) => Math.floor(rnd() * n)
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[int(xs.length)]!
  const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)
  const ident = () => (rnd() < 0.5 ? `${pick(WORDS)}${cap(pick(WORDS))}` : `${pick(WORDS)}${cap(pick(WORDS))}${cap(pick(WORDS))}`)
  const num = () => String(int(rnd() < 0.7 ? 10_000 : 1_000_000))
  const expr = (): string => {
    switch (int(6)) {
      case 0: return `${ident()} ${pick(OPS)} ${num()}`
      case 1: return `${pick(VERBS)}${cap(ident())}(${ident()}, ${num()})`
      case 2: return `${ident()}.${pick(WORDS)}${cap(pick(WORDS))} ?? ${num()}`
      case 3: return `"${pick(WORDS)}-${pick(WORDS)}-${num()}"`
      case 4: return `[${ident()}, ${ident()}, ${num()}]`
      default: return `${ident()}[${num()}] ${pick(CMP)} ${ident()}`
    }
  }
  const statement = (indent: string): string => {
    switch (int(9)) {
      case 0: return `${indent}const ${ident()} = ${expr()}`
      case 1: return `${indent}let ${ident()}: ${pick(TYPES)} = ${expr()}`
      case 2: return `${indent}${ident()}.${pick(VERBS)}${cap(pick(WORDS))}(${expr()})`
      case 3: return `${indent}if (${ident()} ${pick(CMP)} ${num()}) return ${expr()}`
      case 4: return `${indent}// ${pick(COMMENT)} (${ident()})`
      case 5: return `${indent}${ident()} = ${expr()}`
      case 6: return `${indent}yield* ${pick(VERBS)}${cap(ident())}(${ident()}, { ${pick(WORDS)}: ${num()} })`
      case 7: return `${indent}this.${ident()}.push(${expr()})`
      default: return `${indent}await ${pick(VERBS)}${cap(ident())}(${expr()})`
    }
  }

  // Generate the file as a sequence of functions, classes and imports, like real code.
  const out: Array<string> = []
  const importCount = Math.min(40, Math.max(1, Math.floor(lines / 2500)))
  for (let i = 0; i < importCount; i++) out.push(`import { ${ident()}, ${ident()} } from "./${pick(WORDS)}/${pick(WORDS)}${i}.ts"`)
  out.push("")
  while (out.length < lines) {
    const kind = int(10)
    if (kind < 6) {
      out.push(`export const ${pick(VERBS)}${cap(ident())} = (${ident()}: ${pick(TYPES)}, ${ident()}: ${pick(TYPES)}): ${pick(TYPES)} => {`)
      const body = 3 + int(18)
      for (let j = 0; j < body; j++) {
        if (rnd() < 0.12) {
          out.push(`  if (${ident()} ${pick(CMP)} ${num()}) {`)
          const inner = 1 + int(4)
          for (let k = 0; k < inner; k++) out.push(statement("    "))
          out.push("  }")
        } else {
          out.push(statement("  "))
        }
      }
      out.push(`  return ${expr()}`)
      out.push("}")
      out.push("")
    } else if (kind < 9) {
      out.push(`export class ${cap(ident())} {`)
      const methods = 1 + int(4)
      for (let m = 0; m < methods; m++) {
        out.push(`  ${pick(VERBS)}${cap(ident())}(${ident()}: ${pick(TYPES)}): ${pick(TYPES)} {`)
        const body = 2 + int(8)
        for (let j = 0; j < body; j++) out.push(statement("    "))
        out.push("  }")
        if (m < methods - 1) out.push("")
      }
      out.push("}")
      out.push("")
    } else {
      out.push("/**")
      out.push(` * ${cap(pick(COMMENT))}: ${ident()} ${pick(VERBS)}s ${ident()}.`)
      out.push(` * @since 0.${int(10)}.${int(100)}`)
      out.push(" */")
    }
  }
  out.length = lines

  // Targets: evenly spread, 3 context lines each side always inside the file.
  const margin = 3
  if (chunks * 7 > lines) throw new Error("too many chunks for the file size")
  const targets: Array<number> = []
  for (let k = 0; k < chunks; k++) {
    const t = Math.floor(((k + 0.5) * lines) / chunks)
    targets.push(Math.min(lines - 1 - margin, Math.max(margin, t)))
  }
  // Every changed line must be unique in the file (so each 7-line window is unique, also for
  // an ambiguity-checking matcher): replace repeated ones (`}`, blanks, ...) with a unique statement.
  const counts = new Map<string, number>()
  for (const l of out) counts.set(l, (counts.get(l) ?? 0) + 1)
  for (const [k, t] of targets.entries()) {
    const old = out[t]!
    if (counts.get(old) !== 1 || old.trim() === "") {
      const indent = /^\s*/.exec(old)![0]
      const fresh = `${indent.length > 0 ? indent : "  "}const ${ident()}_${k} = ${expr()}`
      counts.set(old, (counts.get(old) ?? 1) - 1)
      out[t] = fresh
      counts.set(fresh, (counts.get(fresh) ?? 0) + 1)
    }
  }
  for (const t of targets) if (counts.get(out[t]!) !== 1) throw new Error(`fixture: changed line ${t + 1} is not unique`)

  const mutate = (line: string, k: number): string => {
    const m = /(\d+)(?!.*\d)/.exec(line)
    if (m !== null) return `${line.slice(0, m.index)}${String(Number(m[1]) + 1 + (k % 7))}${line.slice(m.index + m[1]!.length)}`
    return `${line} // changed ${k}`
  }

  const after = [...out]
  const patch: Array<string> = ["*** Begin Patch", `*** Update File: ${path}`]
  for (const [k, t] of targets.entries()) {
    const next = mutate(out[t]!, k)
    after[t] = next
    patch.push("@@")
    for (let i = t - margin; i < t; i++) patch.push(` ${out[i]!}`)
    patch.push(`-${out[t]!}`)
    patch.push(`+${next}`)
    for (let i = t + 1; i <= t + margin; i++) patch.push(` ${out[i]!}`)
  }
  patch.push("*** End Patch")

  return {
    path,
    original: `${out.join("\n")}\n`,
    patch: `${patch.join("\n")}\n`,
    expected: `${after.join("\n")}\n`,
    lineCount: lines,
    chunkCount: chunks
  }
}

/** A patch replacing line `l` of `lines` (a file at `path`) with `next`, 3 context lines each side. */
export const oneLineUpdatePatch = (path: string, lines: ReadonlyArray<string>, l: number, next: string): string =>
  [
    "*** Begin Patch",
    `*** Update File: ${path}`,
    "@@",
    ...lines.slice(Math.max(0, l - 3), l).map((s) => ` ${s}`),
    `-${lines[l]!}`,
    `+${next}`,
    ...lines.slice(l + 1, l + 4).map((s) => ` ${s}`),
    "*** End Patch",
    ""
  ].join("\n")
