/**
 * Reading the JSON files people edit (plans, the config file) or carry between machines
 * (evidence, changesets) with a useful answer when they are broken: Node 20's `JSON.parse`
 * says neither where nor why, so a small validating scanner finds the line, column and what
 * was expected. Owns only the syntax; what a file must hold is its schema's business.
 *
 * @since 0.1.0
 */

/**
 * Where a JSON text stops being JSON (line and column 1-based). `truncated` when it ends while
 * a value is still open.
 *
 * @category models
 * @since 0.1.0
 */
export interface JsonSyntaxError {
  readonly line: number
  readonly column: number
  readonly offset: number
  readonly problem: string
  readonly truncated: boolean
}

/**
 * The parsed value, or where and why the text is not JSON.
 *
 * @category models
 * @since 0.1.0
 */
export type JsonParse =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: JsonSyntaxError }

class Stop {
  constructor(readonly offset: number, readonly problem: string) {}
}

const describeChar = (c: string): string =>
  c === "\n" ? "a line break" : /[\u0000-\u001f]/.test(c) ? `the control character U+${c.charCodeAt(0).toString(16).padStart(4, "0")}` : `'${c}'`

// Validates without building values; stops at the first problem with its offset.
const scan = (text: string): Stop | undefined => {
  let i = 0
  const ws = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++
  }
  const expect = (what: string): never => {
    if (i >= text.length) throw new Stop(i, `the text ends where ${what} was expected`)
    throw new Stop(i, `expected ${what}, found ${describeChar(text[i]!)}`)
  }
  const string = () => {
    i++
    for (;;) {
      if (i >= text.length) throw new Stop(i, "the text ends inside a string")
      const c = text[i]!
      if (c === "\"") {
        i++
        return
      }
      if (c === "\\") {
        const e = text[i + 1]
        if (e === undefined) throw new Stop(i + 1, "the text ends inside a string")
        if (e === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) throw new Stop(i, "a \\u escape needs four hex digits")
          i += 6
        } else if ("\"\\/bfnrt".includes(e)) {
          i += 2
        } else {
          throw new Stop(i, `'\\${e}' is not a JSON escape`)
        }
        continue
      }
      if (c < " ") throw new Stop(i, `${describeChar(c)} must be escaped inside a string`)
      i++
    }
  }
  const number = () => {
    const m = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i, i + 400))
    if (m === null || m[0] === "-") expect("a value")
    i += m![0].length
  }
  // An object or an array from its opening bracket: members separated by commas up to `close`.
  const members = (close: "}" | "]", member: () => void): void => {
    i++
    ws()
    if (text[i] === close) {
      i++
      return
    }
    for (;;) {
      member()
      ws()
      if (text[i] === ",") {
        i++
        ws()
        if (text[i] === close) throw new Stop(i, `a trailing comma before '${close}' is not allowed in JSON`)
        continue
      }
      if (text[i] === close) {
        i++
        return
      }
      expect(`',' or '${close}'`)
    }
  }
  const entry = (): void => {
    ws()
    if (text[i] !== "\"") expect("a key in double quotes")
    string()
    ws()
    if (text[i] !== ":") expect("':' after the key")
    i++
    value()
  }
  const value = (): void => {
    ws()
    const c = text[i]
    if (c === "{") return members("}", entry)
    if (c === "[") return members("]", value)
    if (c === "\"") return string()
    if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) return number()
    for (const word of ["true", "false", "null"]) {
      if (text.startsWith(word, i)) {
        i += word.length
        return
      }
    }
    if (c === "'") throw new Stop(i, "strings need double quotes in JSON, not single quotes")
    if (c === "/") throw new Stop(i, "comments are not allowed in JSON")
    expect("a value")
  }
  try {
    value()
    ws()
    if (i < text.length) throw new Stop(i, `unexpected ${describeChar(text[i]!)} after the end of the JSON value`)
    return undefined
  } catch (e) {
    if (e instanceof Stop) return e
    throw e
  }
}

const locate = (text: string, offset: number): { readonly line: number; readonly column: number } => {
  const before = text.slice(0, offset)
  const line = before.split("\n").length
  return { line, column: offset - (before.lastIndexOf("\n") + 1) + 1 }
}

/**
 * Parses `text` as JSON (a leading UTF-8 BOM is ignored); on failure, the line, column and
 * problem of the first error.
 *
 * @category constructors
 * @since 0.1.0
 */
export const parseJson = (text: string): JsonParse => {
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text
  try {
    return { ok: true, value: JSON.parse(body) }
  } catch {
    const stop = scan(body) ?? new Stop(0, "not valid JSON")
    const empty = body.trim().length === 0
    return {
      ok: false,
      error: {
        ...locate(body, stop.offset),
        offset: stop.offset,
        problem: empty ? "the file is empty" : stop.problem,
        truncated: empty || stop.offset >= body.length
      }
    }
  }
}

/**
 * Where and why, for a message: `line 3, column 5: expected ',' or '}', found '"'`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const describeSyntaxError = (error: JsonSyntaxError): string => `line ${error.line}, column ${error.column}: ${error.problem}`
