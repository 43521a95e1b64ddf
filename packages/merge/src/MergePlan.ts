/**
 * The merge plan of a join (SPEC §6.5): which children are read-only, which mutate, which
 * exported a changeset and which did not, their write scopes, and where their **actual**
 * changes overlap (paths two or more changesets touch, never declared scope strings). Pure
 * and deterministic: the plan is a function of the children's values in task order.
 *
 * Does not own validating changesets (the join revalidates each one) nor applying anything.
 *
 * @since 0.1.0
 */
import { byCodeUnit } from "@forkjoin/patch/RelativePath"
import type { Changeset } from "@forkjoin/schema/Changeset"
import type { RelativePath, TaskId } from "@forkjoin/schema/Ids"
import type { MergePlan } from "@forkjoin/schema/MergeRun"

/**
 * One child as the join sees it: its task `id` and `mode`, the declared `writeScope` of a
 * mutating task, and the `changeset` it exported (absent when it exported none).
 *
 * @category models
 * @since 0.1.0
 */
export interface MergePlanChild {
  readonly id: TaskId
  readonly mode: "read_only" | "transactional_write"
  readonly writeScope?: ReadonlyArray<RelativePath> | undefined
  readonly changeset?: Changeset | undefined
}

/**
 * The merge plan of `children`, given in task order. A read-only child's changeset, if any,
 * is ignored: it is never applied, so it cannot overlap. A mutating child's scope is its
 * declared `writeScope`, else its changeset's.
 *
 * @category constructors
 * @since 0.1.0
 */
export const mergePlanOf = (children: ReadonlyArray<MergePlanChild>): MergePlan => {
  const readOnly = children.filter((c) => c.mode === "read_only")
  const mutating = children.filter((c) => c.mode === "transactional_write")
  const withChangeset = mutating.flatMap((c) => (c.changeset === undefined ? [] : [{ id: c.id, changeset: c.changeset }]))
  const touchedBy = new Map<RelativePath, Array<TaskId>>()
  for (const c of withChangeset) {
    for (const e of c.changeset.entries) {
      for (const p of e.moveFrom === undefined ? [e.path] : [e.path, e.moveFrom]) {
        const ids = touchedBy.get(p)
        if (ids === undefined) touchedBy.set(p, [c.id])
        // Task order is input order, so an id is only ever appended after earlier ones.
        else if (!ids.includes(c.id)) ids.push(c.id)
      }
    }
  }
  const overlaps = [...touchedBy]
    .filter(([, ids]) => ids.length > 1)
    .sort(([a], [b]) => byCodeUnit(a, b))
    .map(([path, resultIds]) => ({ path, resultIds }))
  return {
    strategy: mutating.length === 0 ? "read_only" : "transactional_parent_merge",
    requiresParentMerge: withChangeset.some((c) => c.changeset.entries.length > 0),
    readOnlyResultIds: readOnly.map((c) => c.id),
    mutatingResultIds: mutating.map((c) => c.id),
    changesetResultIds: withChangeset.map((c) => c.id),
    missingChangesetResultIds: mutating.filter((c) => c.changeset === undefined).map((c) => c.id),
    // `fromEntries` defines own properties, so even a task id like `__proto__` is a plain key.
    writeScopes: Object.fromEntries(mutating.map((c) => [c.id, [...(c.writeScope ?? c.changeset?.writeScope ?? [])]])),
    overlaps
  }
}
