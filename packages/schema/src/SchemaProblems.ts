/**
 * The problems of a failed schema decode, read from the structured `SchemaIssue` (never from a
 * formatted message): each with its key path and Effect's one-line message, and the JSON-path
 * form (`.tasks[0].writeScope[0]`) that plan files, changesets, provider events and the config
 * file report. Owns only that reading; what a caller prefixes to a path is the caller's.
 *
 * @since 0.1.0
 */
import * as SchemaIssue from "effect/SchemaIssue"

/**
 * One problem of a failed decode: where (keys from the decoded value's root) and what.
 *
 * @category models
 * @since 0.1.0
 */
export interface SchemaProblem {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

// Effect's own flattening of an issue tree into `{ path, message }` leaves (Pointer paths
// joined, filter messages kept): the same walk and messages as its default string formatter.
const leaves = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * Every leaf problem of `issue`, in the order Effect reports them (never empty).
 *
 * @category constructors
 * @since 0.1.0
 */
export const problemsOf = (issue: SchemaIssue.Issue): ReadonlyArray<SchemaProblem> => {
  const found = leaves(issue).issues
  if (found.length === 0) return [{ path: [], message: String(issue) }]
  return found.map((leaf) => ({
    path: (leaf.path ?? []).map((segment) => (typeof segment === "object" ? segment.key : segment)),
    message: leaf.message
  }))
}

/**
 * The first leaf problem of `issue`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const firstProblem = (issue: SchemaIssue.Issue): SchemaProblem => problemsOf(issue)[0]!

/**
 * A key path as a JSON-path suffix: indices as `[0]`, keys as `.name` (JSON escapes kept), a key
 * holding a double quote as `["..."]` so the path stays readable back.
 *
 * @category constructors
 * @since 0.1.0
 */
export const jsonPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key) => {
    if (typeof key === "number") return `[${key}]`
    if (typeof key === "symbol") return `[${String(key)}]`
    const quoted = JSON.stringify(key)
    const inner = quoted.slice(1, -1)
    return inner.includes("\"") ? `[${quoted}]` : `.${inner}`
  }).join("")
