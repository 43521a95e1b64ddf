/**
 * @forkjoin/cli: the `forkjoin` command line. The CLI itself starts from `main.ts` (bundled to
 * `dist/forkjoin.cjs`); this index exposes the command programs for reuse and tests.
 *
 * @since 0.1.0
 */
export * as Apply from "./Apply.ts"
export * as Demo from "./Demo.ts"
export * as History from "./History.ts"
export * as Repair from "./Repair.ts"
export * as Run from "./Run.ts"
