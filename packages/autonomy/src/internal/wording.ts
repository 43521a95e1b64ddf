/**
 * The wording the configuration's messages share: "did you mean" for a misspelt key or level,
 * a list said as people say it (`off, supervised, safe or bold`), and an example value shown as
 * it would be written in the file.
 */

// Edit distance, case-insensitive.
const distance = (a: string, b: string): number => {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1))
      diagonal = above
    }
  }
  return row[b.length]!
}

/** ` (did you mean "safe"?)` for the nearest candidate close enough to `word`, else the empty string. */
export const didYouMean = (word: string, candidates: ReadonlyArray<string>): string => {
  const best = candidates
    .map((c) => ({ c, d: distance(word, c) }))
    .filter(({ d }) => d <= Math.max(1, Math.floor(word.length / 3)))
    .sort((x, y) => x.d - y.d)[0]
  return best === undefined ? "" : ` (did you mean ${JSON.stringify(best.c)}?)`
}

/** `a`, `a or b`, `a, b or c`. */
export const orList = (items: ReadonlyArray<string>): string =>
  items.length <= 1 ? items.join("") : `${items.slice(0, -1).join(", ")} or ${items.at(-1)!}`

const written = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(written).join(", ")}]`
    : value !== null && typeof value === "object"
    ? `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${written(v)}`).join(", ")}}`
    : JSON.stringify(value)

/** An example as people read it in a sentence: a string bare, anything else as JSON (`{"maxEvidenceAge": "7d"}`). */
export const shown = (value: unknown): string => (typeof value === "string" ? value : written(value))

/** What a value is, for "found ..." and "... is not": `null`, `an array`, `an object`, `string "x"`, `number 1`. */
export const kindOf = (v: unknown): string =>
  v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `${typeof v} ${JSON.stringify(v)}`
