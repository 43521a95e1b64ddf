/**
 * @forkjoin/patch: the pure, total parser and matcher of the Codex `apply_patch` format, and
 * the shared pure vocabulary above it: content hashes, snapshot facts, relative paths.
 *
 * @since 0.1.0
 */
export * from "./Bytes.ts"
export * as NetChange from "./NetChange.ts"
export * from "./Plan.ts"
export * from "./Parser.ts"
export * from "./Planner.ts"
export * from "./RelativePath.ts"
export * from "./Snapshot.ts"
export * from "./SystemError.ts"
export * from "./TextInfo.ts"
