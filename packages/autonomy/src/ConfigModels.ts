/**
 * The configuration's `models` section resolved (`forkjoin agent`, `forkjoin mcp`): the default
 * provider, each provider's base URL, model and key variable with their sources, and the
 * session limits. The ecosystem's variables (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`) win over
 * the file; an API key is only ever reported as set or unset, never read into the result.
 *
 * @since 0.1.0
 */
import { ModelProviderConfig, ModelProviderKind, type ModelsConfig, SessionLimitsConfig } from "@forkjoin/schema/Autonomy"
import * as Schema from "effect/Schema"
import { builtIn, firstSet, fromEnv, fromFile, Setting } from "./ConfigPrecedence.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * The model providers' environment variables and built-in endpoints, as the official SDKs
 * read them (the base URL variable overrides the file; the key variable is the default
 * `apiKeyEnv`).
 *
 * @category models
 * @since 0.1.0
 */
export const MODEL_ENV = {
  openai: { baseUrl: "OPENAI_BASE_URL", apiKey: "OPENAI_API_KEY", defaultBaseUrl: "https://api.openai.com/v1" },
  anthropic: { baseUrl: "ANTHROPIC_BASE_URL", apiKey: "ANTHROPIC_API_KEY", defaultBaseUrl: "https://api.anthropic.com" }
} as const

/**
 * One model provider resolved: base URL, model and key variable with their sources, whether
 * the key is set (never its value), and the file's other settings as written.
 *
 * @category models
 * @since 0.1.0
 */
export const ResolvedModelProvider = Schema.Struct({
  baseUrl: Setting(Schema.String),
  model: Setting(Schema.NullOr(Schema.String)),
  apiKeyEnv: Setting(Schema.String),
  apiKey: Schema.Literals(["set", "unset"]),
  settings: ModelProviderConfig
})

/**
 * @category models
 * @since 0.1.0
 */
export type ResolvedModelProvider = typeof ResolvedModelProvider.Type

/**
 * The `models` section resolved: the default provider, both providers, the session limits.
 *
 * @category models
 * @since 0.1.0
 */
export const ResolvedModels = Schema.Struct({
  provider: Setting(ModelProviderKind),
  providers: Schema.Struct({ openai: ResolvedModelProvider, anthropic: ResolvedModelProvider }),
  limits: Schema.Struct({ parent: SessionLimitsConfig, child: SessionLimitsConfig })
})

/**
 * @category models
 * @since 0.1.0
 */
export type ResolvedModels = typeof ResolvedModels.Type

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

/**
 * Resolves the file's `models` section (`{}` without one): each base URL from its variable, else
 * the file, else the built-in endpoint; the model from the provider's settings, else `models.model`
 * for the default provider; the key variable from the file, else the SDK's. `envOf` reads a
 * variable (empty counts as unset); `fileName` names the file in sources.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolveModels = (
  file: typeof ModelsConfig.Type,
  envOf: (name: string) => string | undefined,
  fileName: string
): ResolvedModels => {
  const provider = firstSet([fromFile(fileName, "models.provider", file.provider)], builtIn<typeof ModelProviderKind.Type>("openai"))
  const one = (kind: "openai" | "anthropic"): ResolvedModelProvider => {
    const e = MODEL_ENV[kind]
    const settings = file.providers?.[kind] ?? {}
    const key = `models.providers.${kind}`
    const baseUrl = firstSet([fromEnv(e.baseUrl, envOf(e.baseUrl)), fromFile(fileName, `${key}.baseUrl`, settings.baseUrl)], builtIn<string>(e.defaultBaseUrl))
    const model = firstSet<string | null>(
      [fromFile(fileName, `${key}.model`, settings.model), fromFile(fileName, "models.model", provider.value === kind ? file.model : undefined)],
      builtIn(null, "none (pass --model NAME)")
    )
    const apiKeyEnv = firstSet([fromFile(fileName, `${key}.apiKeyEnv`, settings.apiKeyEnv)], builtIn<string>(e.apiKey))
    return { baseUrl, model, apiKeyEnv, apiKey: envOf(apiKeyEnv.value) === undefined ? "unset" : "set", settings }
  }
  return {
    provider,
    providers: { openai: one("openai"), anthropic: one("anthropic") },
    limits: { parent: file.limits?.parent ?? {}, child: file.limits?.child ?? {} }
  }
}
