/**
 * The autonomy configuration (SPEC §7): the level, the mutating-subagents flag and the gate's
 * settings, each resolved with the source it came from. Precedence, highest first: the
 * environment (`FORKJOIN_*`), `forkjoin.config.json` at the workspace root, the level's default
 * (for the flag), the built-in default; command-line flags (`withFlags`) above them all. The
 * `models` section resolves the same way (`ConfigModels.ts`). `resolve` is the pure core; `load`
 * reads the file and the environment; `lowerTo` applies a plan's `autonomy` (which can only lower
 * the level). The settings and defaults (`ConfigSettings.ts`), the file format
 * (`ConfigFile.ts`), the precedence rule (`ConfigPrecedence.ts`) and `explain`/`render`
 * (`ConfigExplain.ts`) are re-exported here, so `Config` is the one module callers import.
 *
 * Does not own the gate's decision (`Gate.ts`) nor reading keys or evidence: trusted keys and
 * the evidence path are resolved here as paths only.
 *
 * @since 0.1.0
 */
import { describeSystemError, errnoOf, remedyOf } from "@forkjoin/patch/SystemError"
import type { AutonomyLevel, ForkjoinConfigFile } from "@forkjoin/schema/Autonomy"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Age from "./Age.ts"
import { AutonomyError } from "./AutonomyError.ts"
import { CONFIG_FILE, readConfigFile } from "./ConfigFile.ts"
import { resolveModels } from "./ConfigModels.ts"
import { builtIn, envReader, firstSet, fromEnv, fromFile, fromFlag, fromLevelDefault, type Place } from "./ConfigPrecedence.ts"
import { DEFAULT_EVIDENCE, DEFAULT_LEVEL, DEFAULT_MAX_EVIDENCE_AGE, ENV, type Env, flagDefaultOf, LEVELS, parseBoolean, parseLevel, type ResolvedConfig } from "./ConfigSettings.ts"
import { didYouMean, orList } from "./internal/wording.ts"

export { CONFIG_FILE } from "./ConfigFile.ts"
export { Explanation, explain, grantSentence, promoteHint, render } from "./ConfigExplain.ts"
export { MODEL_ENV, ResolvedModelProvider, ResolvedModels } from "./ConfigModels.ts"
export { Setting, SettingOrigin } from "./ConfigPrecedence.ts"
export {
  DEFAULT_EVIDENCE,
  DEFAULT_LEVEL,
  DEFAULT_MAX_EVIDENCE_AGE,
  ENV,
  type Env,
  flagDefaultOf,
  grantOf,
  LEVELS,
  MutatingGrant,
  parseBoolean,
  parseLevel,
  ResolvedConfig
} from "./ConfigSettings.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

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
// constructors
// -------------------------------------------------------------------------------------

const LEVEL_LIST = orList(LEVELS)
const BOOLEAN_WORDS = "1, true, yes or on to allow, 0, false, no or off to refuse (any case)"

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
    const read = readConfigFile(input.file)
    if (Result.isFailure(read)) return Result.fail(read.failure)
    file = read.success
  }
  const fileName = path.basename(filePath)
  const envOf = envReader(input.env, notes)
  const problems: Array<string> = []
  // A variable read with `read`; a value it refuses is a problem (and leaves the setting to the places below).
  const fromVariable = <A>(name: string, read: (text: string) => Result.Result<A, string>): Place<A> => {
    const text = envOf(name)
    const value = text === undefined ? undefined : read(text)
    if (value !== undefined && Result.isFailure(value)) problems.push(value.failure)
    return fromEnv(name, value !== undefined && Result.isSuccess(value) ? value.success : undefined)
  }

  const autonomy = firstSet([
    fromVariable(ENV.autonomy, (text) =>
      Result.fromNullishOr(parseLevel(text), () =>
        `${ENV.autonomy}=${JSON.stringify(text)} is not an autonomy level${didYouMean(text.trim(), LEVELS)}: use ${LEVEL_LIST}, or unset it to use ${fileName} or the default (${DEFAULT_LEVEL}).`)),
    fromFile(fileName, "autonomy", file.autonomy)
  ], builtIn(DEFAULT_LEVEL))

  const fileFlag = file.mutatingSubagents
  const mutatingSubagents = firstSet([
    fromVariable(ENV.mutatingSubagents, (text) =>
      Result.fromNullishOr(parseBoolean(text), () =>
        `${ENV.mutatingSubagents}=${JSON.stringify(text)} is not a boolean: use ${BOOLEAN_WORDS}, or unset it to use ${fileName} or the level's default.`)),
    fromFile(fileName, "mutatingSubagents", fileFlag === undefined ? undefined : typeof fileFlag === "boolean" ? fileFlag : parseBoolean(fileFlag) === true)
  ], fromLevelDefault(autonomy.value, flagDefaultOf(autonomy.value)))

  const evidence = firstSet([
    fromVariable(ENV.evidence, (text) => Result.succeed(path.resolve(workspace, text))),
    fromFile(fileName, "gate.evidence", file.gate?.evidence === undefined ? undefined : path.resolve(workspace, file.gate.evidence))
  ], builtIn(path.resolve(workspace, DEFAULT_EVIDENCE)))

  const ageOf = (text: string) => ({ text, millis: Duration.toMillis(Result.getOrThrow(Age.parse(text))) })
  const maxEvidenceAge = firstSet([
    fromVariable(ENV.maxEvidenceAge, (text) =>
      Result.match(Age.parse(text.trim()), {
        onFailure: (failure) =>
          Result.fail(`${ENV.maxEvidenceAge}: ${failure}; set it like 24h, or unset it to use ${fileName} or the default (${DEFAULT_MAX_EVIDENCE_AGE}).`),
        onSuccess: (age) => Result.succeed({ text: text.trim(), millis: Duration.toMillis(age) })
      })),
    fromFile(fileName, "gate.maxEvidenceAge", file.gate?.maxEvidenceAge === undefined ? undefined : ageOf(file.gate.maxEvidenceAge))
  ], builtIn(ageOf(DEFAULT_MAX_EVIDENCE_AGE)))

  const trustedKeys = firstSet(
    [fromFile(fileName, "gate.trustedKeys", file.gate?.trustedKeys?.map((k) => path.resolve(workspace, k)))],
    builtIn<ReadonlyArray<string>>([])
  )

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
    ...(file.cluster === undefined ? {} : {
      cluster: {
        ...file.cluster,
        // A relative SQLite file is the workspace's, whatever folder forkjoin runs in.
        url: file.cluster.url.startsWith("sqlite:") ? `sqlite:${path.resolve(workspace, file.cluster.url.slice("sqlite:".length))}` : file.cluster.url,
        ...(file.cluster.secretFile === undefined ? {} : { secretFile: path.resolve(workspace, file.cluster.secretFile) })
      }
    }),
    notes
  })
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

const rankOf = (level: AutonomyLevel): number => LEVELS.indexOf(level)

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
    ? fromLevelDefault(planLevel, flagDefaultOf(planLevel))
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
  evidence: firstSet([fromFlag("--evidence", flags.evidence === undefined ? undefined : path.resolve(flags.evidence))], resolved.evidence),
  trustedKeys: firstSet(
    [fromFlag("--trust", flags.trustedKeys === undefined || flags.trustedKeys.length === 0 ? undefined : flags.trustedKeys.map((k) => path.resolve(k)))],
    resolved.trustedKeys
  )
})

