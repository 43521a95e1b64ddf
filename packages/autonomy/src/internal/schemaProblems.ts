/**
 * Every problem of a failed schema decode, read from the structured `SchemaIssue` (never from a
 * formatted message): its key path and Effect's one-line message. The config file and evidence
 * report all of them at once, so a user fixes a file in one go.
 */
import * as SchemaIssue from "effect/SchemaIssue"

/** One problem: where (keys from the root) and what. */
export interface SchemaProblem {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

// Effect's own flattening of an issue tree into `{ path, message }` leaves.
const leaves = SchemaIssue.makeFormatterStandardSchemaV1()

/** The leaf problems of `issue`, in the order Effect reports them. */
export const problemsOf = (issue: SchemaIssue.Issue): ReadonlyArray<SchemaProblem> => {
  const found = leaves(issue).issues
  if (found.length === 0) return [{ path: [], message: String(issue) }]
  return found.map((leaf) => ({
    path: (leaf.path ?? []).map((segment) => (typeof segment === "object" ? segment.key : segment)),
    message: leaf.message
  }))
}
