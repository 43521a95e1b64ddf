/**
 * Rust `str` whitespace semantics, which the Codex matcher uses and models are trained on.
 * Rust `char::is_whitespace` is Unicode White_Space: unlike JavaScript's `trim` it strips
 * U+0085 (NEL) and does not strip U+FEFF (BOM).
 */

const WS = "\\t\\n\\u000B\\f\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000"
const LEADING = new RegExp(`^[${WS}]+`)
const IS_WS = new RegExp(`^[${WS}]$`)

const isWs = (code: number): boolean =>
  code === 0x20 || (code >= 0x09 && code <= 0x0d) || (code > 0x7f && IS_WS.test(String.fromCharCode(code)))

/** Rust `str::trim_start`. */
export const trimStart = (s: string): string => s.replace(LEADING, "")

/** Rust `str::trim_end`. */
export const trimEnd = (s: string): string => {
  // A loop, not /[ws]+$/: that regex retries at every position and is quadratic on long text.
  let end = s.length
  while (end > 0 && isWs(s.charCodeAt(end - 1))) end--
  return end === s.length ? s : s.slice(0, end)
}

/** Rust `str::trim`. */
export const trim = (s: string): string => trimEnd(trimStart(s))

const PUNCT = /[\u2010-\u2015\u2212\u2018-\u201B\u201C-\u201F\u00A0\u2002-\u200A\u202F\u205F\u3000]/g

const mapPunct = (c: string): string => {
  const code = c.charCodeAt(0)
  if ((code >= 0x2010 && code <= 0x2015) || code === 0x2212) return "-"
  if (code >= 0x2018 && code <= 0x201b) return "'"
  if (code >= 0x201c && code <= 0x201f) return "\""
  return " "
}

/** Codex pass-4 normalisation: `trim` plus typographic punctuation and spaces mapped to ASCII. */
export const normalise = (s: string): string => trim(s).replace(PUNCT, mapPunct)
