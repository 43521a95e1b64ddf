/**
 * The first problem of a schema decode failure, read from the structured `SchemaIssue` (never
 * from the formatted message): its key path and its one-line message, plus the JSON-path form
 * (`.tasks[0].writeScope[0]`) plan files and actions report. Owns only that reading; the
 * schemas and what a caller prefixes to the path are the callers'.
 */
import * as SchemaIssue from "effect/SchemaIssue"

/** One problem of a failed decode: where (keys from the decoded value's root) and what. */
export interface SchemaProblem {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

// Effect's own flattening of an issue tree into `{ path, message }` leaves (Pointer paths
// joined, filter messages kept): the same walk and messages as its default string formatter.
const leaves = SchemaIssue.makeFormatterStandardSchemaV1()

/** The first leaf problem of `issue`, in the order Effect reports them. */
export const firstProblem = (issue: SchemaIssue.Issue): SchemaProblem => {
  const first = leaves(issue).issues[0]
  if (first === undefined) return { path: [], message: String(issue) }
  return {
    path: (first.path ?? []).map((segment) => (typeof segment === "object" ? segment.key : segment)),
    message: first.message
  }
}

/**
 * A key path as a JSON-path suffix: indices as `[0]`, keys as `.name` (JSON escapes kept), a key
 * holding a double quote as `["..."]` so the path stays readable back.
 */
export const jsonPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key) => {
    if (typeof key === "number") return `[${key}]`
    if (typeof key === "symbol") return `[${String(key)}]`
    const quoted = JSON.stringify(key)
    const inner = quoted.slice(1, -1)
    return inner.includes("\"") ? `[${quoted}]` : `.${inner}`
  }).join("")
