/**
 * The autonomy configuration (SPEC §7): the level, the mutating-subagents flag and the gate's
 * settings, each resolved with the source it came from. Precedence, highest first: the
 * environment (`FORKJOIN_*`), `forkjoin.config.json` at the workspace root, the level's default
 * (for the flag), the built-in default. The `models` section (providers, the default model,
 * session limits) resolves the same way, the ecosystem's variables (`OPENAI_BASE_URL`,
 * `OPENAI_API_KEY`, `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`) above the file; an API key is
 * only ever reported as set or unset. `resolve` is the pure core; `load` reads the file and
 * the environment; `lowerTo` applies a plan's `autonomy` (which can only lower the level);
 * `explain` and `render` are what `forkjoin config explain` prints.
 *
 * Does not own the gate's decision (`Gate.ts`) nor reading keys or evidence: trusted keys and
 * the evidence path are resolved here as paths only.
 *
 * @since 0.1.0
 */
import { describeSystemError, errnoOf, remedyOf } from "@forkjoin/patch/SystemError"
import {
  AutonomyLevel,
  ForkjoinConfigFile,
  ModelProviderConfig,
  ModelProviderKind,
  ModelsConfig,
  SessionLimitsConfig
} from "@forkjoin/schema/Autonomy"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Age from "./Age.ts"
import { AutonomyError } from "./AutonomyError.ts"
import { jsonPath, parseJson } from "./internal/jsonText.ts"
import { problemsOf } from "@forkjoin/schema/SchemaProblems"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * The configuration file's name, read from the workspace root.
 *
 * @category models
 * @since 0.1.0
 */
export const CONFIG_FILE = "forkjoin.config.json"

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
 * Where a setting's value came from, for code (`source` is the same for people).
 *
 * @category models
 * @since 0.1.0
 */
export const SettingOrigin = Schema.Literals(["env", "file", "level_default", "built_in", "plan", "flag"])

/**
 * @category models
 * @since 0.1.0
 */
export type SettingOrigin = typeof SettingOrigin.Type

/**
 * A resolved setting: its value, where it came from (`origin`) and that said for people
 * (`source`: `env FORKJOIN_AUTONOMY`, `forkjoin.config.json autonomy`, `default for level safe`,
 * `built-in default`, ...).
 *
 * @category models
 * @since 0.1.0
 */
export const Setting = <S extends Schema.Top>(value: S) =>
  Schema.Struct({ value, origin: SettingOrigin, source: Schema.String })

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

/**
 * The input of `resolve`: the workspace root, the environment, and the config file's path and
 * text (`undefined` when there is no file).
 *
 * @category models
 * @since 0.1.0
 */
export interface ResolveInput {
  readonly workspace: string
  readonly env: Env
  readonly file: { readonly path: string; readonly text: string } | undefined
}

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

const rankOf = (level: AutonomyLevel): number => LEVELS.indexOf(level)

const LEVEL_LIST = "off, supervised, safe or bold"
const BOOLEAN_WORDS = "1, true, yes or on to allow, 0, false, no or off to refuse (any case)"

// -------------------------------------------------------------------------------------
// the config file
// -------------------------------------------------------------------------------------

const TOP_KEYS: ReadonlyArray<string> = Object.keys(ForkjoinConfigFile.fields)
const GATE_KEYS: ReadonlyArray<string> = Object.keys(ForkjoinConfigFile.fields.gate.schema.fields)

const MODELS_KEYS: ReadonlyArray<string> = Object.keys(ForkjoinConfigFile.fields.models.schema.fields)
const PROVIDER_KEYS: ReadonlyArray<string> = Object.keys(ModelProviderConfig.fields)
const LIMIT_KEYS: ReadonlyArray<string> = Object.keys(SessionLimitsConfig.fields)

const knownKeysAt = (parent: ReadonlyArray<PropertyKey>): ReadonlyArray<string> | undefined => {
  const at = parent.join(".")
  if (at === "") return TOP_KEYS
  if (at === "gate") return GATE_KEYS
  if (at === "models") return MODELS_KEYS
  if (at === "models.providers") return ["openai", "anthropic"]
  if (at === "models.providers.openai" || at === "models.providers.anthropic") return PROVIDER_KEYS
  if (at === "models.limits") return ["parent", "child"]
  if (at === "models.limits.parent" || at === "models.limits.child") return LIMIT_KEYS
  return undefined
}

// Edit distance, for "did you mean" on a misspelt key or level.
const distance = (a: string, b: string): number => {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1))
      diagonal = above
    }
  }
  return row[b.length]!
}

const didYouMean = (word: string, candidates: ReadonlyArray<string>): string => {
  const best = candidates
    .map((c) => ({ c, d: distance(word, c) }))
    .filter(({ d }) => d <= Math.max(1, Math.floor(word.length / 3)))
    .sort((x, y) => x.d - y.d)[0]
  return best === undefined ? "" : ` (did you mean ${JSON.stringify(best.c)}?)`
}

const valueAt = (root: unknown, keys: ReadonlyArray<PropertyKey>): unknown =>
  keys.reduce<unknown>((v, k) => (v !== null && typeof v === "object" ? (v as Record<PropertyKey, unknown>)[k] : undefined), root)

const kindOf = (v: unknown): string =>
  v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `${typeof v} ${JSON.stringify(v)}`

// What a value at a known place must be, said for people.
const hintAt = (keys: ReadonlyArray<PropertyKey>, value: unknown): string | undefined => {
  const at = keys.map((k) => (typeof k === "number" ? "[]" : String(k))).join(".")
  switch (at) {
    case "autonomy":
      return `is not an autonomy level; use ${LEVEL_LIST}${typeof value === "string" ? didYouMean(value, LEVELS) : ""}`
    case "mutatingSubagents":
      return "is not a boolean; use true or false (or one of the strings \"1\", \"yes\", \"on\", \"0\", \"no\", \"off\")"
    case "schemaVersion":
      return "is not a schema version this build reads; use 1 (or leave it out)"
    case "$schema":
      return "must be a string (the URL or path of the file's JSON schema)"
    case "gate":
      return "must be an object like {\"maxEvidenceAge\": \"7d\"}"
    case "gate.evidence":
      return "must be the evidence file's path, relative to the workspace root"
    case "gate.maxEvidenceAge":
      return "must be an age like 30m, 24h or 7d"
    case "gate.trustedKeys":
      return "must be a list of public key files, like [\"keys/ci.pem.pub\"]"
    case "gate.trustedKeys.[]":
      return "must be the path of a public key file, relative to the workspace root"
    default:
      return undefined
  }
}

// The problems of a parsed config object; empty when it is valid.
const fileProblems = (raw: Record<string, unknown>): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const decoded = Schema.decodeUnknownResult(ForkjoinConfigFile, { onExcessProperty: "error", errors: "all" })(raw)
  if (Result.isFailure(decoded)) {
    for (const problem of problemsOf(decoded.failure.issue)) {
      const at = `$${jsonPath(problem.path)}`
      const key = problem.path.at(-1)
      const known = knownKeysAt(problem.path.slice(0, -1))
      if (known !== undefined && typeof key === "string" && !known.includes(key)) {
        problems.push(`${at}: unknown key ${JSON.stringify(key)}${didYouMean(key, known)}; the keys allowed here are ${known.join(", ")}`)
        continue
      }
      const value = valueAt(raw, problem.path)
      const hint = hintAt(problem.path, value)
      problems.push(hint === undefined ? `${at}: ${problem.message}` : `${at}: ${kindOf(value)} ${hint}`)
    }
  }
  const gate = raw["gate"]
  if (gate !== null && typeof gate === "object" && !Array.isArray(gate)) {
    const g = gate as Record<string, unknown>
    const age = g["maxEvidenceAge"]
    if (typeof age === "string") {
      const parsed = Age.parse(age)
      if (Result.isFailure(parsed)) problems.push(`$.gate.maxEvidenceAge: ${parsed.failure}`)
    }
    if (g["evidence"] === "") problems.push(`$.gate.evidence: an empty path; ${hintAt(["gate", "evidence"], "")}, or leave it out for ${DEFAULT_EVIDENCE}`)
    const keys = g["trustedKeys"]
    if (Array.isArray(keys)) {
      keys.forEach((k, i) => {
        if (k === "") problems.push(`$.gate.trustedKeys[${i}]: an empty path; ${hintAt(["gate", "trustedKeys", i], k)}`)
      })
    }
  }
  return problems
}

const configError = (file: string, problems: ReadonlyArray<string>): AutonomyError =>
  new AutonomyError({
    code: "config_invalid",
    paths: [file],
    message: problems.length === 1
      ? `${file} is not valid: ${problems[0]}. Fix the file, or remove it to use the defaults.`
      : `${file} is not valid (${problems.length} problems):\n${problems.map((p) => `  - ${p}`).join("\n")}\nFix the file, or remove it to use the defaults.`
  })

// Parses and checks the file; a mutatingSubagents string is read in any case (as the environment is).
const readFile = (file: { readonly path: string; readonly text: string }): Result.Result<ForkjoinConfigFile, AutonomyError> => {
  const parsed = parseJson(file.text)
  if (!parsed.ok) {
    const e = parsed.error
    return Result.fail(new AutonomyError({
      code: "config_invalid",
      paths: [file.path],
      message: `${file.path} is not JSON: line ${e.line}, column ${e.column}: ${e.problem}. ` +
        "Fix the file (it must hold one JSON object like {\"autonomy\": \"safe\"}), or remove it to use the defaults."
    }))
  }
  const raw = parsed.value
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    return Result.fail(new AutonomyError({
      code: "config_invalid",
      paths: [file.path],
      message: `${file.path} must hold one JSON object like {"autonomy": "safe"}, found ${kindOf(raw)}. Fix the file, or remove it to use the defaults.`
    }))
  }
  const record: Record<string, unknown> = { ...raw }
  const flag = record["mutatingSubagents"]
  if (typeof flag === "string" && parseBoolean(flag) !== undefined) record["mutatingSubagents"] = flag.trim().toLowerCase()
  const problems = fileProblems(record)
  if (problems.length > 0) return Result.fail(configError(file.path, problems))
  const decoded = Schema.decodeUnknownResult(ForkjoinConfigFile)(record)
  return Result.isSuccess(decoded) ? Result.succeed(decoded.success) : Result.fail(configError(file.path, problemsOf(decoded.failure.issue).map((p) => p.message)))
}

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

const envError = (problems: ReadonlyArray<string>): AutonomyError =>
  new AutonomyError({
    code: "env_invalid",
    paths: [],
    message: problems.length === 1 ? problems[0]! : `${problems.length} environment variables are not valid:\n${problems.map((p) => `  - ${p}`).join("\n")}`
  })

/**
 * Resolves every setting with its source from the environment and the config file (pure). A
 * file that is not JSON, not an object, has an unknown key or a bad value is `config_invalid`
 * (every problem with its JSON path); a bad `FORKJOIN_*` value is `env_invalid` naming the
 * variable. A variable set to the empty string counts as unset.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolve = (input: ResolveInput): Result.Result<ResolvedConfig, AutonomyError> => {
  const workspace = path.resolve(input.workspace)
  const filePath = input.file?.path ?? path.join(workspace, CONFIG_FILE)
  const notes: Array<string> = []
  let file: ForkjoinConfigFile = {}
  if (input.file !== undefined) {
    const read = readFile(input.file)
    if (Result.isFailure(read)) return Result.fail(read.failure)
    file = read.success
  }
  const fileName = path.basename(filePath)
  const envOf = (name: string): string | undefined => {
    const v = input.env[name]
    if (v === "") notes.push(`${name} is set but empty: ignored.`)
    return v === undefined || v === "" ? undefined : v
  }
  const problems: Array<string> = []

  let autonomy: ResolvedConfig["autonomy"] = { value: DEFAULT_LEVEL, origin: "built_in", source: "built-in default" }
  const envLevel = envOf(ENV.autonomy)
  if (envLevel !== undefined) {
    const level = parseLevel(envLevel)
    if (level === undefined) {
      problems.push(`${ENV.autonomy}=${JSON.stringify(envLevel)} is not an autonomy level${didYouMean(envLevel.trim(), LEVELS)}: use ${LEVEL_LIST}, or unset it to use ${fileName} or the default (${DEFAULT_LEVEL}).`)
    } else {
      autonomy = { value: level, origin: "env", source: `env ${ENV.autonomy}` }
    }
  } else if (file.autonomy !== undefined) {
    autonomy = { value: file.autonomy, origin: "file", source: `${fileName} autonomy` }
  }

  let mutatingSubagents: ResolvedConfig["mutatingSubagents"] = {
    value: flagDefaultOf(autonomy.value),
    origin: "level_default",
    source: `default for level ${autonomy.value}`
  }
  const envFlag = envOf(ENV.mutatingSubagents)
  if (envFlag !== undefined) {
    const flag = parseBoolean(envFlag)
    if (flag === undefined) {
      problems.push(`${ENV.mutatingSubagents}=${JSON.stringify(envFlag)} is not a boolean: use ${BOOLEAN_WORDS}, or unset it to use ${fileName} or the level's default.`)
    } else {
      mutatingSubagents = { value: flag, origin: "env", source: `env ${ENV.mutatingSubagents}` }
    }
  } else if (file.mutatingSubagents !== undefined) {
    const flag = typeof file.mutatingSubagents === "boolean" ? file.mutatingSubagents : parseBoolean(file.mutatingSubagents) === true
    mutatingSubagents = { value: flag, origin: "file", source: `${fileName} mutatingSubagents` }
  }

  let evidence: ResolvedConfig["evidence"] = { value: path.resolve(workspace, DEFAULT_EVIDENCE), origin: "built_in", source: "built-in default" }
  const envEvidence = envOf(ENV.evidence)
  if (envEvidence !== undefined) {
    evidence = { value: path.resolve(workspace, envEvidence), origin: "env", source: `env ${ENV.evidence}` }
  } else if (file.gate?.evidence !== undefined) {
    evidence = { value: path.resolve(workspace, file.gate.evidence), origin: "file", source: `${fileName} gate.evidence` }
  }

  const ageOf = (text: string) => ({ text, millis: Duration.toMillis(Result.getOrThrow(Age.parse(text))) })
  let maxEvidenceAge: ResolvedConfig["maxEvidenceAge"] = { value: ageOf(DEFAULT_MAX_EVIDENCE_AGE), origin: "built_in", source: "built-in default" }
  const envAge = envOf(ENV.maxEvidenceAge)
  if (envAge !== undefined) {
    const parsed = Age.parse(envAge.trim())
    if (Result.isFailure(parsed)) {
      problems.push(`${ENV.maxEvidenceAge}: ${parsed.failure}; set it like 24h, or unset it to use ${fileName} or the default (${DEFAULT_MAX_EVIDENCE_AGE}).`)
    } else {
      maxEvidenceAge = { value: { text: envAge.trim(), millis: Duration.toMillis(parsed.success) }, origin: "env", source: `env ${ENV.maxEvidenceAge}` }
    }
  } else if (file.gate?.maxEvidenceAge !== undefined) {
    maxEvidenceAge = { value: ageOf(file.gate.maxEvidenceAge), origin: "file", source: `${fileName} gate.maxEvidenceAge` }
  }

  const trustedKeys: ResolvedConfig["trustedKeys"] = file.gate?.trustedKeys !== undefined
    ? { value: file.gate.trustedKeys.map((k) => path.resolve(workspace, k)), origin: "file", source: `${fileName} gate.trustedKeys` }
    : { value: [], origin: "built_in", source: "built-in default" }

  const models = resolveModels(file.models ?? {}, envOf, fileName)

  if (problems.length > 0) return Result.fail(envError(problems))
  return Result.succeed({
    workspace,
    file: { path: filePath, found: input.file !== undefined },
    autonomy,
    mutatingSubagents,
    evidence,
    maxEvidenceAge,
    trustedKeys,
    models,
    notes
  })
}

// The models section: env base URLs above the file, the key reported as set/unset only.
const resolveModels = (
  file: typeof ModelsConfig.Type,
  envOf: (name: string) => string | undefined,
  fileName: string
): ResolvedModels => {
  const provider: ResolvedModels["provider"] = file.provider !== undefined
    ? { value: file.provider, origin: "file", source: `${fileName} models.provider` }
    : { value: "openai", origin: "built_in", source: "built-in default" }
  const one = (kind: "openai" | "anthropic"): ResolvedModelProvider => {
    const e = MODEL_ENV[kind]
    const settings = file.providers?.[kind] ?? {}
    const key = `models.providers.${kind}`
    const envBase = envOf(e.baseUrl)
    const baseUrl: ResolvedModelProvider["baseUrl"] = envBase !== undefined
      ? { value: envBase, origin: "env", source: `env ${e.baseUrl}` }
      : settings.baseUrl !== undefined
      ? { value: settings.baseUrl, origin: "file", source: `${fileName} ${key}.baseUrl` }
      : { value: e.defaultBaseUrl, origin: "built_in", source: "built-in default" }
    const model: ResolvedModelProvider["model"] = settings.model !== undefined
      ? { value: settings.model, origin: "file", source: `${fileName} ${key}.model` }
      : file.model !== undefined && provider.value === kind
      ? { value: file.model, origin: "file", source: `${fileName} models.model` }
      : { value: null, origin: "built_in", source: "none (pass --model NAME)" }
    const apiKeyEnv: ResolvedModelProvider["apiKeyEnv"] = settings.apiKeyEnv !== undefined
      ? { value: settings.apiKeyEnv, origin: "file", source: `${fileName} ${key}.apiKeyEnv` }
      : { value: e.apiKey, origin: "built_in", source: "built-in default" }
    return { baseUrl, model, apiKeyEnv, apiKey: envOf(apiKeyEnv.value) === undefined ? "unset" : "set", settings }
  }
  return {
    provider,
    providers: { openai: one("openai"), anthropic: one("anthropic") },
    limits: { parent: file.limits?.parent ?? {}, child: file.limits?.child ?? {} }
  }
}

/**
 * Reads `<workspace>/forkjoin.config.json` (absent is fine) and resolves it with `env`
 * (default `process.env`). An unreadable file is `config_invalid` with what to do.
 *
 * @category constructors
 * @since 0.1.0
 */
export const load = (workspace: string, env: Env = process.env): Effect.Effect<ResolvedConfig, AutonomyError> =>
  Effect.suspend(() => {
    const root = path.resolve(workspace)
    const filePath = path.join(root, CONFIG_FILE)
    let text: string | undefined
    try {
      text = fs.readFileSync(filePath, "utf8")
    } catch (cause) {
      if (errnoOf(cause) !== "ENOENT") {
        const remedy = remedyOf(cause)
        return Effect.fail(new AutonomyError({
          code: "config_invalid",
          paths: [filePath],
          message: `${filePath} cannot be read (${describeSystemError(cause)})${remedy === undefined ? "" : `; ${remedy}`}.`,
          cause
        }))
      }
    }
    const resolved = resolve({ workspace: root, env, file: text === undefined ? undefined : { path: filePath, text } })
    return Result.isSuccess(resolved) ? Effect.succeed(resolved.success) : Effect.fail(resolved.failure)
  })

// -------------------------------------------------------------------------------------
// combinators
// -------------------------------------------------------------------------------------

/**
 * A plan's `autonomy` applied to a configuration: the effective configuration (the level
 * lowered when the plan asks for less; the flag's level default following it), the level the
 * plan asked for, and whether it asked for more than the configuration allows (`capped`, with
 * the message to print).
 *
 * @category models
 * @since 0.1.0
 */
export interface Lowering {
  readonly config: ResolvedConfig
  readonly requested: AutonomyLevel | undefined
  readonly allowed: AutonomyLevel
  readonly capped: boolean
  readonly message: string | undefined
}

/**
 * Applies a plan's `autonomy`: it can lower the level, never raise it (a plan cannot promote
 * itself). A flag that came from the level's default follows the lowered level; a flag set in
 * the environment or the file stays.
 *
 * @category combinators
 * @since 0.1.0
 */
export const lowerTo = (resolved: ResolvedConfig, planLevel: AutonomyLevel | undefined): Lowering => {
  const allowed = resolved.autonomy.value
  if (planLevel === undefined || planLevel === allowed) {
    return { config: resolved, requested: planLevel, allowed, capped: false, message: undefined }
  }
  if (rankOf(planLevel) > rankOf(allowed)) {
    return {
      config: resolved,
      requested: planLevel,
      allowed,
      capped: true,
      message: `The plan asks for autonomy ${planLevel}, but the configuration allows ${allowed} (${resolved.autonomy.source}); ` +
        `running at ${allowed}. A plan can only lower the level: raise it with ${ENV.autonomy} or "autonomy" in ${CONFIG_FILE}.`
    }
  }
  const autonomy = { value: planLevel, origin: "plan" as const, source: `plan autonomy (lowered from ${allowed}, ${resolved.autonomy.source})` }
  const mutatingSubagents = resolved.mutatingSubagents.origin === "level_default"
    ? { value: flagDefaultOf(planLevel), origin: "level_default" as const, source: `default for level ${planLevel}` }
    : resolved.mutatingSubagents
  return { config: { ...resolved, autonomy, mutatingSubagents }, requested: planLevel, allowed, capped: false, message: undefined }
}

/**
 * The configuration with settings given on the command line (`--evidence FILE`, `--trust
 * PUBKEY`...), which win over everything else. Relative paths are taken from the current directory.
 *
 * @category combinators
 * @since 0.1.0
 */
export const withFlags = (
  resolved: ResolvedConfig,
  flags: { readonly evidence?: string | undefined; readonly trustedKeys?: ReadonlyArray<string> | undefined }
): ResolvedConfig => ({
  ...resolved,
  ...(flags.evidence === undefined ? {} : { evidence: { value: path.resolve(flags.evidence), origin: "flag", source: "--evidence" } }),
  ...(flags.trustedKeys === undefined || flags.trustedKeys.length === 0
    ? {}
    : { trustedKeys: { value: flags.trustedKeys.map((k) => path.resolve(k)), origin: "flag", source: "--trust" } })
})

// -------------------------------------------------------------------------------------
// explain
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
