/**
 * @forkjoin/engine: the native patch engine, its locks, journal protocol and startup repair.
 *
 * @since 0.1.0
 */
export * from "./Engine.ts"
export type { RepairOutcome, RepairReport } from "./internal/repair.ts"
export * from "./Facade.ts"
export * from "./Policy.ts"
export * as Progress from "./Progress.ts"
export * as Remote from "./Remote.ts"
