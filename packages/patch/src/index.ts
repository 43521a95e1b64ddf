/**
 * @forkjoin/patch: the pure, total parser and matcher of the Codex `apply_patch` format.
 *
 * @since 0.1.0
 */
export * from "./Plan.ts"
export * from "./Parser.ts"
export * from "./Planner.ts"
export * from "./RelativePath.ts"
export * from "./TextInfo.ts"
