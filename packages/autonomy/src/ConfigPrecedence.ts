/**
 * Where a configuration setting's value comes from: the places a setting can be set (a
 * command-line flag, the environment, `forkjoin.config.json`, a level's default, the built-in
 * default), each said for code (`origin`) and for people (`source`), and the one rule every
 * setting is resolved by: the first place, highest first, that sets it wins.
 *
 * Does not own which places a setting has nor their order (`Config.ts`, `ConfigModels.ts`).
 *
 * @since 0.1.0
 */
import type { AutonomyLevel } from "@forkjoin/schema/Autonomy"
import * as Schema from "effect/Schema"
import type { Env } from "./ConfigSettings.ts"

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
 * A resolved setting holding an `A` (the type of `Setting` of a schema of `A`).
 *
 * @category models
 * @since 0.1.0
 */
export type Resolved<A> = ReturnType<typeof Setting<Schema.Schema<A>>>["Type"]

/**
 * What one place says about a setting: its value there, `undefined` when it is not set there.
 *
 * @category models
 * @since 0.1.0
 */
export type Place<A> = Resolved<A | undefined>

/**
 * The precedence rule: the first place (highest first) that sets the setting, else `fallback`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const firstSet = <A>(places: ReadonlyArray<Place<A>>, fallback: Resolved<A>): Resolved<A> =>
  places.find((place): place is Resolved<A> => place.value !== undefined) ?? fallback

/**
 * A command-line flag (`source` is the flag as typed, like `--evidence`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromFlag = <A>(flag: string, value: A | undefined): Place<A> => ({ value, origin: "flag", source: flag })

/**
 * An environment variable.
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromEnv = <A>(name: string, value: A | undefined): Place<A> => ({ value, origin: "env", source: `env ${name}` })

/**
 * A key of the config file (`key` as a dotted path, like `gate.evidence`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromFile = <A>(fileName: string, key: string, value: A | undefined): Place<A> => ({
  value,
  origin: "file",
  source: `${fileName} ${key}`
})

/**
 * The default a level gives a setting (the mutating-subagents flag's).
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromLevelDefault = <A>(level: AutonomyLevel, value: A): Resolved<A> => ({
  value,
  origin: "level_default",
  source: `default for level ${level}`
})

/**
 * The built-in default (`source` says so unless given).
 *
 * @category constructors
 * @since 0.1.0
 */
export const builtIn = <A>(value: A, source = "built-in default"): Resolved<A> => ({ value, origin: "built_in", source })

/**
 * Reads the environment for resolving: a variable set to the empty string counts as unset,
 * with a note saying it was ignored.
 *
 * @category constructors
 * @since 0.1.0
 */
export const envReader = (env: Env, notes: Array<string>) => (name: string): string | undefined => {
  const v = env[name]
  if (v === "") notes.push(`${name} is set but empty: ignored.`)
  return v === undefined || v === "" ? undefined : v
}
