/**
 * What `forkjoin config explain` prints: every setting of a resolved configuration with its
 * value, its source and where it can be set, what that allows mutating children (one sentence
 * with what to do), the model providers (keys as set or unset) and notes; as JSON and as
 * terminal lines.
 *
 * @since 0.1.0
 */
import { ModelProviderKind, SessionLimitsConfig } from "@forkjoin/schema/Autonomy"
import * as Schema from "effect/Schema"
import { CONFIG_FILE } from "./ConfigFile.ts"
import { MODEL_ENV } from "./ConfigModels.ts"
import { ENV, grantOf, MutatingGrant, type ResolvedConfig } from "./ConfigSettings.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * What `forkjoin config explain --json` prints: every setting with its value, its source and
 * where it can be set, what that allows mutating children, and notes.
 *
 * @category models
 * @since 0.1.0
 */
export const Explanation = Schema.Struct({
  workspace: Schema.String,
  file: Schema.Struct({ path: Schema.String, found: Schema.Boolean }),
  settings: Schema.Array(Schema.Struct({
    name: Schema.String,
    value: Schema.Union([Schema.String, Schema.Boolean, Schema.Array(Schema.String)]),
    source: Schema.String,
    env: Schema.optionalKey(Schema.String),
    configKey: Schema.optionalKey(Schema.String)
  })),
  mutatingChildren: MutatingGrant,
  /** Model providers (`forkjoin agent`, `forkjoin mcp`): API keys as set/unset, never their values. */
  models: Schema.optionalKey(Schema.Struct({
    provider: Schema.Struct({ value: ModelProviderKind, source: Schema.String }),
    providers: Schema.Array(Schema.Struct({
      name: ModelProviderKind,
      baseUrl: Schema.String,
      baseUrlSource: Schema.String,
      baseUrlEnv: Schema.String,
      model: Schema.NullOr(Schema.String),
      modelSource: Schema.String,
      apiKeyEnv: Schema.String,
      apiKey: Schema.Literals(["set", "unset"])
    })),
    limits: Schema.Struct({ parent: SessionLimitsConfig, child: SessionLimitsConfig })
  })),
  notes: Schema.Array(Schema.String)
})

/**
 * @category models
 * @since 0.1.0
 */
export type Explanation = typeof Explanation.Type

/**
 * How to promote to `safe`, for messages at `off`/`supervised`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const promoteHint = `set ${ENV.autonomy}=safe or "autonomy": "safe" in ${CONFIG_FILE}, run \`forkjoin probe\`, then \`forkjoin gate\``

/**
 * Why the configuration refuses, gates or allows mutating children, in one sentence with
 * what to do.
 *
 * @category constructors
 * @since 0.1.0
 */
export const grantSentence = (
  resolved: Pick<ResolvedConfig, "autonomy" | "mutatingSubagents" | "evidence" | "maxEvidenceAge" | "trustedKeys">
): string => {
  const level = resolved.autonomy
  switch (grantOf(resolved)) {
    case "ungated":
      return `Level bold (${level.source}): mutating children run without checking probe evidence; every run records the skipped gate.`
    case "gated":
      return `Level ${level.value} (${level.source}) with mutating children allowed (${resolved.mutatingSubagents.source}): ` +
        `they run only when \`forkjoin gate\` passes (evidence ${resolved.evidence.value}, at most ${resolved.maxEvidenceAge.value.text} old` +
        `${resolved.trustedKeys.value.length === 0 ? "" : `, signed by one of ${resolved.trustedKeys.value.length} trusted key(s)`}).`
    case "refused":
      if (level.value === "off") {
        return `Level off (${level.source}) allows analysis only, no mutating children. To let children write: ${promoteHint}.`
      }
      if (level.value === "supervised") {
        return `Level supervised (${level.source}) allows read-only children only. To let children write: ${promoteHint}.`
      }
      return `Mutating children are turned off by ${resolved.mutatingSubagents.source} (false) at level ${level.value}: ` +
        `unset it or set it to true, run \`forkjoin probe\`, then \`forkjoin gate\`.`
  }
}

/**
 * The JSON-ready explanation of a resolved configuration.
 *
 * @category constructors
 * @since 0.1.0
 */
export const explain = (resolved: ResolvedConfig): Explanation => {
  const notes = [...resolved.notes]
  if (!resolved.file.found) notes.push(`No ${CONFIG_FILE} in the workspace: settings come from the environment and the defaults.`)
  if (resolved.autonomy.value === "off" && resolved.mutatingSubagents.value && resolved.mutatingSubagents.origin !== "level_default") {
    notes.push(`mutatingSubagents is true (${resolved.mutatingSubagents.source}) but the level is off: the flag is ignored, off allows analysis only.`)
  }
  notes.push(grantSentence(resolved))
  return {
    workspace: resolved.workspace,
    file: resolved.file,
    settings: [
      { name: "autonomy", value: resolved.autonomy.value, source: resolved.autonomy.source, env: ENV.autonomy, configKey: "autonomy" },
      {
        name: "mutatingSubagents",
        value: resolved.mutatingSubagents.value,
        source: resolved.mutatingSubagents.source,
        env: ENV.mutatingSubagents,
        configKey: "mutatingSubagents"
      },
      { name: "gate.evidence", value: resolved.evidence.value, source: resolved.evidence.source, env: ENV.evidence, configKey: "gate.evidence" },
      {
        name: "gate.maxEvidenceAge",
        value: resolved.maxEvidenceAge.value.text,
        source: resolved.maxEvidenceAge.source,
        env: ENV.maxEvidenceAge,
        configKey: "gate.maxEvidenceAge"
      },
      { name: "gate.trustedKeys", value: resolved.trustedKeys.value, source: resolved.trustedKeys.source, configKey: "gate.trustedKeys" }
    ],
    mutatingChildren: grantOf(resolved),
    models: {
      provider: { value: resolved.models.provider.value, source: resolved.models.provider.source },
      providers: (["openai", "anthropic"] as const).map((name) => {
        const p = resolved.models.providers[name]
        return {
          name,
          baseUrl: p.baseUrl.value,
          baseUrlSource: p.baseUrl.source,
          baseUrlEnv: MODEL_ENV[name].baseUrl,
          model: p.model.value,
          modelSource: p.model.source,
          apiKeyEnv: p.apiKeyEnv.value,
          apiKey: p.apiKey
        }
      }),
      limits: resolved.models.limits
    },
    notes
  }
}

/**
 * The explanation as terminal lines: the file, one aligned line per setting (name, value,
 * source), then the notes.
 *
 * @category constructors
 * @since 0.1.0
 */
export const render = (explanation: Explanation): ReadonlyArray<string> => {
  const shown = (v: Explanation["settings"][number]["value"]): string =>
    typeof v === "string" ? v : typeof v === "boolean" ? String(v) : v.length === 0 ? "(none)" : v.join(", ")
  const nameWidth = Math.max(...explanation.settings.map((s) => s.name.length))
  const valueWidth = Math.max(...explanation.settings.map((s) => shown(s.value).length))
  return [
    `config file: ${explanation.file.path}${explanation.file.found ? "" : " (not found)"}`,
    ...explanation.settings.map((s) => `${s.name.padEnd(nameWidth)}  ${shown(s.value).padEnd(valueWidth)}  ${s.source}`),
    `mutating children: ${explanation.mutatingChildren}`,
    ...(explanation.models === undefined ? [] : [
      `models.provider: ${explanation.models.provider.value} (${explanation.models.provider.source})`,
      ...explanation.models.providers.map((p) =>
        `models.providers.${p.name}: ${p.baseUrl} (${p.baseUrlSource}), model ${p.model ?? "(none)"} (${p.modelSource}), ` +
        `key ${p.apiKeyEnv} ${p.apiKey}`
      ),
      ...(["parent", "child"] as const).flatMap((who) => {
        const l = explanation.models!.limits[who]
        const parts = Object.entries(l).map(([k, v]) => `${k} ${v}`)
        return parts.length === 0 ? [] : [`models.limits.${who}: ${parts.join(", ")}`]
      })
    ]),
    ...explanation.notes.map((n) => `note: ${n}`)
  ]
}
