/**
 * `@forkjoin/orchestrator`: joining children's changesets into a workspace. `Run` runs a plan
 * end to end, `Join` applies children one transaction each (or atomically), `Conflicts` lists
 * and resolves what the join held back, `Rollback` undoes one transaction, `Verify` runs a
 * plan's verification command, `Revalidate` checks an untrusted changeset, `Gc` removes the
 * artifacts of finished runs, `ChildProcesses` ends child processes without risking the caller's.
 *
 * @since 0.1.0
 */
export * as ChildProcesses from "./ChildProcesses.ts"
export * as Conflicts from "./Conflicts.ts"
export * as Gc from "./Gc.ts"
export * as Join from "./Join.ts"
export * from "./OrchestratorError.ts"
export * as Revalidate from "./Revalidate.ts"
export * as Rollback from "./Rollback.ts"
export * as Run from "./Run.ts"
export * as Verify from "./Verify.ts"
