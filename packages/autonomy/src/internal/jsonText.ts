/**
 * The JSON text of the autonomy files beyond parsing (which is `@forkjoin/schema/JsonText`):
 * the JSON paths their problems are reported at, and the canonical JSON (sorted keys) the
 * evidence digest is computed over.
 */

/** A JSON-path suffix for a key path: `.gate.trustedKeys[1]`. */
export const jsonPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key) => typeof key === "number" ? `[${key}]` : /^[A-Za-z_$][\w$]*$/.test(String(key)) ? `.${String(key)}` : `[${JSON.stringify(String(key))}]`).join("")

/** JSON with object keys sorted at every level (arrays keep their order); `undefined` members are left out. */
export const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(",")}]`
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`
  }
  return JSON.stringify(value)
}
