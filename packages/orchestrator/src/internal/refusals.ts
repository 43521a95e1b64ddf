/**
 * A child's refused edits at the join: which refusals keep the child out (its write scope, the
 * workspace's path policy or permissions: it tried to change something it may not, so what it
 * left is not the work it meant) and which only go on record (content refusals such as a stale
 * file or a patch whose context was not found, which the child can retry past). Pure.
 */
import type { ChildOutcome, ChildRefusal, TaskId } from "@forkjoin/schema"

/** Refusal codes that mean the child reached outside what it may change. */
const SCOPE_OR_POLICY: ReadonlySet<string> = new Set([
  "write_scope_violation",
  "path_invalid",
  "path_outside_roots",
  "path_denied_by_policy",
  "permission_denied",
  "directory_create_denied",
  "analysis_only"
])

/** The refusals that keep a child out of the join. */
export const blocking = (refusals: ReadonlyArray<ChildRefusal>): ReadonlyArray<ChildRefusal> =>
  refusals.filter((r) => SCOPE_OR_POLICY.has(r.code))

const describe = (r: ChildRefusal): string => `${r.tool}${r.path === undefined ? "" : ` ${r.path}`} (${r.code}, step ${r.step})`

/**
 * The `scope_violation` outcome of a child with a refusal for its scope or policy, or
 * `undefined` when it has none: nothing of such a child is applied.
 */
export const scopeViolation = (childId: TaskId, refusals: ReadonlyArray<ChildRefusal>): ChildOutcome | undefined => {
  const refused = blocking(refusals)
  if (refused.length === 0) return undefined
  return {
    childId,
    status: "scope_violation",
    reason: `the child's ${refused.map(describe).join(", ")} ${refused.length === 1 ? "was" : "were"} refused for its write scope or ` +
      "the workspace's policy, so nothing of it was applied; keep its edits inside its writeScope (or widen the scope) and run it again",
    refusals
  }
}

/** `outcome` with the child's refusals listed (unchanged when there are none). */
export const withRefusals = (outcome: ChildOutcome, refusals: ReadonlyArray<ChildRefusal> | undefined): ChildOutcome =>
  refusals === undefined || refusals.length === 0 ? outcome : { ...outcome, refusals }
