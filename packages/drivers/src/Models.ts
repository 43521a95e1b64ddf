/**
 * From the workspace's resolved configuration (`forkjoin.config.json` `models`, the
 * `OPENAI_*` / `ANTHROPIC_*` variables) and the command's flags (`--provider`, `--model`) to
 * one provider ready to call and the session limits: every problem (no model, a bad URL, a
 * missing key for a public endpoint) is a `ProviderConfigError` naming the setting to fix,
 * raised before any request and before any child starts.
 *
 * Owns that choice. Does not own reading the configuration (`@forkjoin/autonomy/Config`) nor
 * the wire (`OpenAiCompatible`, `Anthropic`).
 *
 * @since 0.1.0
 */
import type { AutonomyError } from "@forkjoin/autonomy/AutonomyError"
import { CONFIG_FILE, load as loadConfig, MODEL_ENV, type ResolvedModels } from "@forkjoin/autonomy/Config"
import type * as LanguageModel from "effect/ai/LanguageModel"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Anthropic from "./Anthropic.ts"
import * as OpenAiCompatible from "./OpenAiCompatible.ts"
import type { Limits } from "./ParentSession.ts"
import { type ProviderKind, ProviderConfigError, resolve, type ResolvedProvider } from "./ProviderSettings.ts"
import * as Redaction from "./Redaction.ts"

/**
 * What a command chose: the provider, its limits for the parent and each child.
 *
 * @category models
 * @since 0.1.0
 */
export interface ModelChoice {
  readonly provider: ResolvedProvider
  readonly parent: Limits
  readonly child: Limits
}

/**
 * Chooses the provider (`--provider`, else `models.provider`, else `openai`) and its model
 * (`--model`, else the file's), and checks it can be called. Its `redact` removes every
 * configured key, the other provider's too: a proxy or a misrouted request may echo either.
 *
 * @category constructors
 * @since 0.1.0
 */
export const choose = (
  models: ResolvedModels,
  env: Readonly<Record<string, string | undefined>>,
  flags: { readonly provider?: ProviderKind | undefined; readonly model?: string | undefined }
): Result.Result<ModelChoice, ProviderConfigError> => {
  const kind = flags.provider ?? models.provider.value
  const p = models.providers[kind]
  const model = flags.model ?? p.model.value
  const key = `${CONFIG_FILE} models.providers.${kind}`
  if (model === null) {
    return Result.fail(new ProviderConfigError({
      setting: "--model",
      detail: `no model is configured for ${kind}: pass --model NAME, or set "models": {"model": "NAME"} in ${CONFIG_FILE}`
    }))
  }
  const resolved = resolve(
    { ...p.settings, kind, model, baseUrl: p.baseUrl.value, apiKeyEnv: p.apiKeyEnv.value },
    env,
    key,
    {
      baseUrl: p.baseUrl.origin === "env" ? MODEL_ENV[kind].baseUrl : p.baseUrl.origin === "file" ? `${key}.baseUrl` : `${MODEL_ENV[kind].baseUrl} (or ${key}.baseUrl)`,
      model: flags.model !== undefined ? "--model" : p.model.origin === "file" ? p.model.source : "--model"
    }
  )
  if (Result.isFailure(resolved)) return Result.fail(resolved.failure)
  const keys = Object.values(models.providers).flatMap((q) => {
    const value = env[q.apiKeyEnv.value]
    return value === undefined || value === "" ? [] : [value]
  })
  return Result.succeed({
    provider: { ...resolved.success, redact: Redaction.make(keys) },
    parent: models.limits.parent,
    child: models.limits.child
  })
}

/**
 * The `LanguageModel` of a provider.
 *
 * @category constructors
 * @since 0.1.0
 */
export const languageModel = (provider: ResolvedProvider): Effect.Effect<LanguageModel.LanguageModel> =>
  provider.kind === "openai" ? OpenAiCompatible.make(provider) : Anthropic.make(provider)

/**
 * The workspace's model: its configuration read (`forkjoin.config.json` and `env`), the choice
 * made (flags over the file) and the `LanguageModel` to call, or why there is none. A bad
 * configuration file fails; a missing or unusable model is a value the caller decides on.
 *
 * @category constructors
 * @since 0.1.0
 */
export const forWorkspace = (
  workspace: string,
  env: Readonly<Record<string, string | undefined>>,
  flags: { readonly provider?: ProviderKind | undefined; readonly model?: string | undefined } = {}
): Effect.Effect<Result.Result<ModelChoice & { readonly model: LanguageModel.LanguageModel }, ProviderConfigError>, AutonomyError> =>
  Effect.gen(function*() {
    const config = yield* loadConfig(workspace, env)
    const choice = choose(config.models, env, flags)
    if (Result.isFailure(choice)) return Result.fail(choice.failure)
    return Result.succeed({ ...choice.success, model: yield* languageModel(choice.success.provider) })
  })
