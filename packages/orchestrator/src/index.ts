/**
 * The orchestrator: run_subagents, the join, conflicts and rollback.
 *
 * @since 0.1.0
 */
export {}
