/**
 * The merge probe's scenario catalogue (SPEC §8): which scenarios evidence must contain and
 * pass. The gate reads it to know what "every required scenario" means, independent of what
 * an evidence file lists; the probe (`probes/`) implements one scenario per entry. Its digest
 * is part of the engine fingerprint, so changing the set invalidates old evidence.
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import type { Sha256Hash } from "@forkjoin/schema/Ids"

/**
 * One scenario: a stable id, what it shows, and whether the gate requires it. `revision` is
 * bumped when what a scenario checks changes.
 *
 * @category models
 * @since 0.1.0
 */
export interface ScenarioSpec {
  readonly id: string
  readonly title: string
  readonly required: boolean
  readonly revision: number
}

/**
 * Every scenario, in the order the probe runs and reports them.
 *
 * @category constants
 * @since 0.1.0
 */
export const scenarios: ReadonlyArray<ScenarioSpec> = [
  { id: "disjoint_children_applied", title: "disjoint children are applied, one transaction each", required: true, revision: 1 },
  { id: "same_file_auto_merged", title: "non-overlapping edits to one file are merged", required: true, revision: 1 },
  { id: "overlap_conflict_resolved", title: "overlapping edits are held as a conflict, finish is refused, then resolved", required: true, revision: 1 },
  { id: "baseline_drift_refused", title: "a child whose baseline changed is refused", required: true, revision: 1 },
  { id: "baseline_unverifiable_refused", title: "a child whose baseline cannot be verified is refused", required: true, revision: 1 },
  { id: "tampered_path_mismatch_refused", title: "a changeset whose entry disagrees with its path is refused", required: true, revision: 1 },
  { id: "tampered_missing_scope_refused", title: "a changeset without a write scope is refused", required: true, revision: 1 },
  { id: "tampered_outside_scope_refused", title: "a changeset entry outside the write scope is refused", required: true, revision: 1 },
  { id: "mid_apply_failure_rolled_back", title: "a write failing mid-apply rolls that child back and keeps its siblings", required: true, revision: 1 },
  { id: "rollback_one_child", title: "rollback_transaction undoes exactly one child", required: true, revision: 1 },
  { id: "crash_each_stage_repaired", title: "a crash after each engine stage is repaired at start-up", required: true, revision: 1 },
  { id: "completion_order_independent", title: "the join's result does not depend on the order children finish in", required: true, revision: 1 }
]

/**
 * The digest of the catalogue (ids, titles, required flags, revisions), part of the fingerprint.
 *
 * @category constants
 * @since 0.1.0
 */
export const scenarioSetDigest: Sha256Hash = sha256(JSON.stringify(scenarios.map((s) => [s.id, s.title, s.required, s.revision])))
