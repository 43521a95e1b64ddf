/**
 * The engine's file policy vocabulary, shared with every view that must hide exactly what the
 * engine refuses (overlay listings, history views): default denied globs and the glob matcher.
 *
 * @since 0.1.0
 */
export { compileGlob } from "./internal/resolve.ts"

/**
 * Paths no request may touch unless the policy says otherwise (SPEC §3 stage 3).
 *
 * @category constants
 * @since 0.1.0
 */
export const DEFAULT_DENIED_GLOBS: ReadonlyArray<string> = [".git/**", ".forkjoin/**"]
