/**
 * `@forkjoin/probes`: the deterministic subagent merge probe (SPEC §8). `Probe` runs every
 * scenario of the catalogue through the real orchestrator, engine and history in scratch
 * workspaces and returns one result per scenario.
 *
 * @since 0.1.0
 */
export * as Probe from "./Probe.ts"
