/**
 * `@forkjoin/autonomy`: autonomy levels and the promotion gate (SPEC §7). `Config` resolves the
 * level, the mutating-subagents flag and the gate's settings with their sources; `Filesystem`
 * and `Fingerprint` say what the probe ran on and with; `Keys` and `Evidence` make, sign, write
 * and read the probe's evidence; `Gate` decides whether mutating children may run; `Scenarios`
 * is the probe's catalogue; `Age` parses ages like `7d`.
 *
 * @since 0.1.0
 */
export * as Age from "./Age.ts"
export * from "./AutonomyError.ts"
export * as Config from "./Config.ts"
export * as Evidence from "./Evidence.ts"
export * as Filesystem from "./Filesystem.ts"
export * as Fingerprint from "./Fingerprint.ts"
export * as Gate from "./Gate.ts"
export * as Keys from "./Keys.ts"
export * as Scenarios from "./Scenarios.ts"
