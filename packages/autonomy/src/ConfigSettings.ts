/**
 * The autonomy configuration's settings (SPEC §7): their environment variables, the built-in
 * defaults, the levels in order, the resolved configuration (every setting with its source)
 * and what it allows mutating children; and reading booleans and level names as people write
 * them.
 *
 * Does not own resolving (`Config.ts`), the file format (`ConfigFile.ts`) nor the `models`
 * section (`ConfigModels.ts`).
 *
 * @since 0.1.0
 */
import { AutonomyLevel, ClusterConfig } from "@forkjoin/schema/Autonomy"
import * as Schema from "effect/Schema"
import { ResolvedModels } from "./ConfigModels.ts"
import { Setting } from "./ConfigPrecedence.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * The environment variables, by setting.
 *
 * @category models
 * @since 0.1.0
 */
export const ENV = {
  autonomy: "FORKJOIN_AUTONOMY",
  mutatingSubagents: "FORKJOIN_MUTATING_SUBAGENTS",
  evidence: "FORKJOIN_EVIDENCE",
  maxEvidenceAge: "FORKJOIN_EVIDENCE_MAX_AGE"
} as const

/**
 * The built-in level (SPEC §7): the parent edits, children are read-only.
 *
 * @category models
 * @since 0.1.0
 */
export const DEFAULT_LEVEL: AutonomyLevel = "supervised"

/**
 * Where the evidence is when nothing says otherwise (relative to the workspace root).
 *
 * @category models
 * @since 0.1.0
 */
export const DEFAULT_EVIDENCE = ".forkjoin/evidence/merge-probe.json"

/**
 * How old evidence may be when nothing says otherwise.
 *
 * @category models
 * @since 0.1.0
 */
export const DEFAULT_MAX_EVIDENCE_AGE = "7d"

/**
 * The levels from least to most autonomous; a plan may move down this list, never up.
 *
 * @category models
 * @since 0.1.0
 */
export const LEVELS: ReadonlyArray<AutonomyLevel> = ["off", "supervised", "safe", "bold"]

/**
 * Every setting with its value and source. Paths are absolute (relative ones are taken from
 * the workspace root); `notes` are remarks made while resolving (an empty variable ignored, ...).
 *
 * @category models
 * @since 0.1.0
 */
export const ResolvedConfig = Schema.Struct({
  workspace: Schema.String,
  file: Schema.Struct({ path: Schema.String, found: Schema.Boolean }),
  autonomy: Setting(AutonomyLevel),
  mutatingSubagents: Setting(Schema.Boolean),
  evidence: Setting(Schema.String),
  maxEvidenceAge: Setting(Schema.Struct({ text: Schema.String, millis: Schema.Number })),
  trustedKeys: Setting(Schema.Array(Schema.String)),
  models: ResolvedModels,
  /** The file's `cluster`, its secret file resolved against the workspace (none: children run here). */
  cluster: Schema.optionalKey(ClusterConfig),
  notes: Schema.Array(Schema.String)
})

/**
 * @category models
 * @since 0.1.0
 */
export type ResolvedConfig = typeof ResolvedConfig.Type

/**
 * What the configuration allows mutating children: `refused` (not at all), `gated` (when the
 * gate passes), `ungated` (`bold`: without evidence).
 *
 * @category models
 * @since 0.1.0
 */
export const MutatingGrant = Schema.Literals(["refused", "gated", "ungated"])

/**
 * @category models
 * @since 0.1.0
 */
export type MutatingGrant = typeof MutatingGrant.Type

/**
 * The environment as `process.env` holds it.
 *
 * @category models
 * @since 0.1.0
 */
export type Env = Readonly<Record<string, string | undefined>>

// -------------------------------------------------------------------------------------
// booleans and levels
// -------------------------------------------------------------------------------------

const TRUE_WORDS = new Set(["1", "true", "yes", "on"])
const FALSE_WORDS = new Set(["0", "false", "no", "off"])

/**
 * A boolean as people write it: `1/true/yes/on` or `0/false/no/off`, any case, surrounding
 * spaces ignored; `undefined` for anything else.
 *
 * @category constructors
 * @since 0.1.0
 */
export const parseBoolean = (text: string): boolean | undefined => {
  const word = text.trim().toLowerCase()
  return TRUE_WORDS.has(word) ? true : FALSE_WORDS.has(word) ? false : undefined
}

/**
 * An autonomy level's name, any case, surrounding spaces ignored; `undefined` for an unknown name.
 *
 * @category constructors
 * @since 0.1.0
 */
export const parseLevel = (text: string): AutonomyLevel | undefined =>
  LEVELS.find((level) => level === text.trim().toLowerCase())

/**
 * The flag's default at a level: `safe` and `bold` allow mutating children, `off` and
 * `supervised` do not.
 *
 * @category constructors
 * @since 0.1.0
 */
export const flagDefaultOf = (level: AutonomyLevel): boolean => level === "safe" || level === "bold"

/**
 * What the configuration allows mutating children: none at `off` (the flag is ignored there),
 * none without the flag, without the gate at `bold`, else when the gate passes.
 *
 * @category combinators
 * @since 0.1.0
 */
export const grantOf = (config: Pick<ResolvedConfig, "autonomy" | "mutatingSubagents">): MutatingGrant =>
  config.autonomy.value === "off" || !config.mutatingSubagents.value
    ? "refused"
    : config.autonomy.value === "bold"
    ? "ungated"
    : "gated"
