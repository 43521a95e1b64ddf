/**
 * Denied-path globs for directory listings: the engine's own policy vocabulary, so listings
 * hide exactly what the engine refuses to read.
 */
export { compileGlob, DEFAULT_DENIED_GLOBS } from "@forkjoin/engine/Policy"
