/**
 * `@forkjoin/merge`: the join's pure core. The three-way text and file merge (`TextMerge`,
 * `FileMerge`), the merge plan from what children touched (`MergePlan`), one child's engine
 * plan against the live files (`ChildPlan`) and the restore plan of a rollback
 * (`RollbackPlan`). No I/O.
 *
 * @since 0.1.0
 */
export * as ChildPlan from "./ChildPlan.ts"
export * as FileMerge from "./FileMerge.ts"
export * as MergePlan from "./MergePlan.ts"
export * as RollbackPlan from "./RollbackPlan.ts"
export * as TextMerge from "./TextMerge.ts"
