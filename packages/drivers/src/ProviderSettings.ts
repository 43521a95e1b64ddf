/**
 * How a model provider is reached: its wire protocol (`openai`: Chat Completions, which OpenAI,
 * vLLM, Ollama, LM Studio and OpenRouter speak; `anthropic`: Messages), base URL, model, the
 * name of the environment variable holding its API key, streaming, request timeout, retries and
 * the largest answer read. `resolve` checks the settings before any request (a key is required
 * only for a public endpoint; a loopback base URL may be keyless) and reads the key into a
 * `Redacted`, so it is never printed, logged or written to an artifact; its `redact` removes
 * the key from whatever the provider sends back.
 *
 * Owns the settings' shape, their defaults and the errors naming the setting to fix. Does not
 * own where settings come from (`@forkjoin/autonomy/Config`) nor the wire (the providers).
 *
 * @since 0.1.0
 */
import { isLoopbackHost } from "@forkjoin/http/Loopback"
import { ModelProviderConfig, ModelProviderKind } from "@forkjoin/schema/Autonomy"
import * as Redacted from "effect/Redacted"
import * as Redaction from "./Redaction.ts"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * A provider's wire protocol (`@forkjoin/schema/Autonomy`'s, the config file's).
 *
 * @category models
 * @since 0.1.0
 */
export const ProviderKind = ModelProviderKind

/**
 * @category models
 * @since 0.1.0
 */
export type ProviderKind = typeof ProviderKind.Type

/**
 * The settings of one provider: the config file's provider section with its protocol and a
 * model (every other field has a default).
 *
 * @category models
 * @since 0.1.0
 */
export const ProviderSettings = Schema.Struct({
  ...ModelProviderConfig.fields,
  kind: ProviderKind,
  model: Schema.String.check(Schema.isNonEmpty())
})

/**
 * @category models
 * @since 0.1.0
 */
export type ProviderSettings = typeof ProviderSettings.Type

/**
 * Settings checked and completed: defaults filled, the endpoint built, the key read.
 *
 * @category models
 * @since 0.1.0
 */
export interface ResolvedProvider {
  readonly kind: ProviderKind
  readonly model: string
  readonly baseUrl: string
  readonly endpoint: string
  readonly apiKeyEnv: string
  readonly apiKey: Redacted.Redacted<string> | undefined
  readonly stream: boolean
  readonly timeoutMs: number
  readonly maxRetries: number
  readonly retryBaseMs: number
  readonly maxTokens: number
  /** Bytes of one answer (body or stream) past which it is refused unread. */
  readonly maxResponseBytes: number
  /** Removes every configured key (and credential patterns) from provider text. */
  readonly redact: Redaction.Redactor
  /** The setting a message names for each field (a config key, a variable or a flag). */
  readonly settingNames: SettingNames
}

/**
 * Where each setting is fixed, for messages: a config key, an environment variable or a flag.
 *
 * @category models
 * @since 0.1.0
 */
export interface SettingNames {
  readonly baseUrl: string
  readonly model: string
  readonly timeoutMs: string
  readonly maxResponseBytes: string
}

/**
 * The public endpoint and key variable of each wire protocol.
 *
 * @category models
 * @since 0.1.0
 */
export const defaults = {
  openai: { baseUrl: "https://api.openai.com/v1", baseUrlEnv: "OPENAI_BASE_URL", apiKeyEnv: "OPENAI_API_KEY" },
  anthropic: { baseUrl: "https://api.anthropic.com", baseUrlEnv: "ANTHROPIC_BASE_URL", apiKeyEnv: "ANTHROPIC_API_KEY" }
} as const satisfies Record<ProviderKind, { baseUrl: string; baseUrlEnv: string; apiKeyEnv: string }>

/**
 * The default of `maxResponseBytes`: 32 MiB, far above any answer of `maxTokens` tokens.
 *
 * @category models
 * @since 0.1.0
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024

// -------------------------------------------------------------------------------------
// errors
// -------------------------------------------------------------------------------------

/**
 * A provider that cannot be used as configured: `setting` names what to fix. Raised before
 * any request (missing key, bad URL) so no child starts with a provider that cannot answer.
 *
 * @category errors
 * @since 0.1.0
 */
export class ProviderConfigError extends Schema.TaggedError<ProviderConfigError>()("ProviderConfigError", {
  setting: Schema.String,
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message(): string {
    return `model provider: ${this.detail} (setting: ${this.setting})`
  }
}

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------


/**
 * Whether `url` points at this machine (a local server may be keyless).
 *
 * @category guards
 * @since 0.1.0
 */
export const isLoopback = (url: URL): boolean => isLoopbackHost(url.hostname)

/**
 * Checks settings and reads the key from `env`; `settingPrefix` is where the settings came
 * from (`names` overrides single settings: a variable, a flag), for messages.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolve = (
  settings: ProviderSettings,
  env: Readonly<Record<string, string | undefined>>,
  settingPrefix: string,
  names: Partial<SettingNames> = {}
): Result.Result<ResolvedProvider, ProviderConfigError> => {
  const settingNames: SettingNames = {
    baseUrl: names.baseUrl ?? `${settingPrefix}.baseUrl`,
    model: names.model ?? `${settingPrefix}.model`,
    timeoutMs: names.timeoutMs ?? `${settingPrefix}.timeoutMs`,
    maxResponseBytes: names.maxResponseBytes ?? `${settingPrefix}.maxResponseBytes`
  }
  const d = defaults[settings.kind]
  const baseUrl = (settings.baseUrl ?? d.baseUrl).replace(/\/+$/, "")
  let url: URL
  try {
    url = new URL(baseUrl)
  } catch (e) {
    return Result.fail(new ProviderConfigError({ setting: settingNames.baseUrl, detail: `'${baseUrl}' is not a URL`, cause: e }))
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return Result.fail(new ProviderConfigError({ setting: settingNames.baseUrl, detail: `'${baseUrl}' is not an http(s) URL` }))
  }
  const apiKeyEnv = settings.apiKeyEnv ?? d.apiKeyEnv
  const key = env[apiKeyEnv]
  const apiKey = key === undefined || key === "" ? undefined : Redacted.make(key)
  if (apiKey === undefined && !isLoopback(url)) {
    return Result.fail(
      new ProviderConfigError({
        setting: apiKeyEnv,
        detail: `no API key for ${url.host}: set the environment variable ${apiKeyEnv} (a local server on a loopback address needs none)`
      })
    )
  }
  return Result.succeed({
    kind: settings.kind,
    model: settings.model,
    baseUrl,
    endpoint: settings.kind === "openai" ? `${baseUrl}/chat/completions` : `${baseUrl}/v1/messages`,
    apiKeyEnv,
    apiKey,
    stream: settings.stream ?? false,
    timeoutMs: settings.timeoutMs ?? 120_000,
    maxRetries: settings.maxRetries ?? 3,
    retryBaseMs: settings.retryBaseMs ?? 500,
    maxTokens: settings.maxTokens ?? 4096,
    maxResponseBytes: settings.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    redact: Redaction.make(key === undefined || key === "" ? [] : [key]),
    settingNames
  })
}
