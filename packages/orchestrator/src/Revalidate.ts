/**
 * A child's changeset is untrusted input, even from our own overlay: it crossed a process or
 * file boundary. `revalidate` checks it before the join reads a single live file and says
 * which child status a problem gives (SPEC §6.6 step 1): a path that is not a normalized
 * workspace-relative path, or an image path that differs from its entry's, is
 * `invalid_changeset_path`; an empty or invalid scope, an entry outside it, or a scope wider
 * than the task declared is `scope_violation`; anything else the schema refuses, or a
 * changeset of another child, is `invalid_changeset`. Pure.
 *
 * Owns the classification. The schema (`@forkjoin/schema/Changeset`) owns the full shape;
 * blob hashes are checked when the join reads them (`ChildPlan`).
 *
 * @since 0.1.0
 */
import { normalizePath } from "@forkjoin/patch/RelativePath"
import { type Changeset, decodeUntrustedChangeset, type RelativePath, scopeCovers, type TaskId } from "@forkjoin/schema"
import * as Result from "effect/Result"
import { firstProblem } from "@forkjoin/schema/SchemaProblems"

/**
 * Why a changeset is refused: the child's status and a message naming the problem.
 *
 * @category models
 * @since 0.1.0
 */
export interface Refusal {
  readonly status: "invalid_changeset" | "invalid_changeset_path" | "scope_violation"
  readonly reason: string
  readonly paths: ReadonlyArray<string>
}

const refuse = (status: Refusal["status"], reason: string, paths: ReadonlyArray<string> = []): Result.Result<never, Refusal> =>
  Result.fail({ status, reason, paths })

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

const isNormal = (p: unknown): p is string => {
  if (typeof p !== "string") return false
  const n = normalizePath(p)
  return Result.isSuccess(n) && n.success === p
}



/**
 * Checks `raw` as the changeset of `task` (its id and declared write scope, already
 * normalized). Succeeds with the decoded changeset or fails with the child's status.
 *
 * @category constructors
 * @since 0.1.0
 */
export const revalidate = (
  raw: unknown,
  task: { readonly id: TaskId; readonly writeScope: ReadonlyArray<RelativePath> }
): Result.Result<Changeset, Refusal> => {
  if (!isRecord(raw)) return refuse("invalid_changeset", "the changeset is not a JSON object")
  if (raw["schemaVersion"] !== 1) {
    return refuse("invalid_changeset", `unknown changeset schemaVersion ${JSON.stringify(raw["schemaVersion"])}; this build reads version 1`)
  }
  const scope = raw["writeScope"]
  if (!Array.isArray(scope) || scope.length === 0 || !scope.every(isNormal)) {
    return refuse("scope_violation", "missing_or_invalid_write_scope: the changeset needs a non-empty writeScope of normalized relative paths")
  }
  const entries = Array.isArray(raw["entries"]) ? raw["entries"] : []
  for (const [i, e] of entries.entries()) {
    if (!isRecord(e)) continue
    const at = `entries[${i}]`
    for (const key of ["path", "moveFrom"] as const) {
      const p = e[key]
      if (p !== undefined && !isNormal(p)) {
        return refuse("invalid_changeset_path", `${at}.${key} ${JSON.stringify(p)} is not a normalized workspace-relative path`, [String(p)])
      }
    }
    const source = e["moveFrom"] ?? e["path"]
    for (const [key, expected] of [["preimage", source], ["postimage", e["path"]], ["overwritten", e["path"]]] as const) {
      const image = e[key]
      if (isRecord(image) && image["path"] !== expected) {
        return refuse("invalid_changeset_path", `${at}.${key}.path ${JSON.stringify(image["path"])} differs from the entry's ${JSON.stringify(expected)}`, [String(expected)])
      }
    }
    for (const key of ["path", "moveFrom"] as const) {
      const p = e[key]
      if (typeof p === "string" && !scopeCovers(scope, p)) {
        return refuse("scope_violation", `${at}.${key} ${JSON.stringify(p)} is outside the changeset's writeScope`, [p])
      }
    }
  }
  const decoded = decodeUntrustedChangeset(raw)
  if (Result.isFailure(decoded)) {
    const first = firstProblem(decoded.failure.issue)
    const where = first.path.map(String).join(".")
    return refuse("invalid_changeset", `${where === "" ? "" : `at ${where}: `}${first.message}`)
  }
  const changeset = decoded.success
  if (changeset.childId !== task.id || changeset.taskId !== task.id) {
    return refuse("invalid_changeset", `the changeset belongs to child ${JSON.stringify(changeset.childId)} (task ${JSON.stringify(changeset.taskId)}), not to task ${JSON.stringify(task.id)}`)
  }
  const wider = changeset.writeScope.filter((p) => !scopeCovers(task.writeScope, p))
  if (wider.length > 0) {
    return refuse("scope_violation", `the changeset's writeScope ${JSON.stringify(wider)} is not within the task's declared scope ${JSON.stringify(task.writeScope)}`, wider)
  }
  return Result.succeed(changeset)
}
