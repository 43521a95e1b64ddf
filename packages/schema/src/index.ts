/**
 * `@forkjoin/schema`: the shared vocabulary of forkjoin as Effect Schemas (ids, snapshots,
 * patch history records, engine errors). Schemas and tiny helpers only, no runtime logic.
 *
 * @since 0.1.0
 */
export * from "./EngineError.ts"
export * from "./ErrorCode.ts"
export * from "./Ids.ts"
export * from "./PatchHistoryRecord.ts"
export * from "./Snapshot.ts"
export * from "./UtcTimestamp.ts"
export * from "./JournalIntent.ts"
export * from "./Changeset.ts"
export * from "./HistoryViews.ts"
export * from "./Conflict.ts"
export * from "./MergeRun.ts"
export * from "./Evidence.ts"
export * from "./Autonomy.ts"
export * from "./SchemaProblems.ts"
export * from "./Gateway.ts"
export * from "./Transcript.ts"
