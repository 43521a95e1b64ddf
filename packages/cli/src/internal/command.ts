/**
 * How every `forkjoin` subcommand is put together, defined once: the wiring that turns what
 * its program fails with into output and an exit code (`reportFailure`), under a span named
 * after the command. It does not own the commands' flags (`flags.ts`, each `XCommand.ts`),
 * their programs nor what a failure prints (`errors.ts`).
 *
 * @since 0.1.0
 */
import { Command } from "effect/cli"
import * as Effect from "effect/Effect"
import { type CommandFailure, reportFailure } from "./errors.ts"
import type { CommandExit } from "./output.ts"

/**
 * The tag of a failure `reportFailure` prints.
 *
 * @category models
 * @since 0.1.0
 */
export type FailureTag = CommandFailure["_tag"]

// A record, not a list, so a new kind of failure fails typecheck until it is listed.
const EVERY_FAILURE: Record<FailureTag, true> = {
  UsageError: true,
  EngineError: true,
  HistoryCommandError: true,
  RunFailed: true,
  OrchestratorError: true,
  AutonomyError: true
}
const EVERY_FAILURE_TAG = Object.keys(EVERY_FAILURE) as ReadonlyArray<FailureTag>

/** The failures and the services of a generator that yields `Eff` (as `Effect.fn` computes them). */
type ErrorOf<Eff> = [Eff] extends [never] ? never : [Eff] extends [Effect.Effect<infer _A, infer E, infer _R>] ? E : never
type ServicesOf<Eff> = [Eff] extends [never] ? never : [Eff] extends [Effect.Effect<infer _A, infer _E, infer R>] ? R : never

/** The failures among `E` a command reports: those tagged with one of `T`. */
type Reported<E, T extends FailureTag> = Extract<E, CommandFailure & { readonly _tag: T }>

/**
 * A failure whose tag is one of `tags`: the ones a command reports (anything else passes
 * through). `tags` lists every `T` (all of them when a command names none).
 */
const isReported = <E, T extends FailureTag>(tags: ReadonlyArray<FailureTag>) => {
  const reported: ReadonlySet<string> = new Set(tags)
  return (error: E): error is Reported<E, T> =>
    typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string" && reported.has(error._tag)
}

/** Whether the command's input asked for `--json` (a command without the flag never does). */
const wantsJsonOutput = (input: unknown): boolean =>
  typeof input === "object" && input !== null && "json" in input && input.json === true

/**
 * A subcommand whose program is the generator `body`, run in the span `forkjoin.<group>.<name>`.
 * Its failures are printed by `reportFailure` as `forkjoin <group> <name>` (with `--json`, as
 * one JSON line) and set the exit code: every `CommandFailure` unless `reports` names fewer.
 *
 * @category constructors
 * @since 0.1.0
 */
export const command = <
  const Name extends string,
  const Config extends Command.Command.Config,
  Eff extends Effect.Effect<unknown, unknown, unknown>,
  T extends FailureTag = FailureTag
>(
  name: Name,
  config: Config,
  body: (input: Command.Command.Config.Infer<Config>) => Generator<Eff, unknown, never>,
  options: { readonly group?: string; readonly reports?: ReadonlyArray<T> } = {}
) => {
  const label = options.group === undefined ? name : `${options.group} ${name}`
  const program = Effect.fn(`forkjoin.${label.replaceAll(" ", ".")}`)(body)
  const reported = isReported<ErrorOf<Eff>, T>(options.reports ?? EVERY_FAILURE_TAG)
  return Command.make(
    name,
    config,
    (input: Command.Command.Config.Infer<Config>) =>
      Effect.catchIf<unknown, ErrorOf<Eff>, ServicesOf<Eff>, Reported<ErrorOf<Eff>, T>, never, CommandExit, never>(
        program(input),
        reported,
        reportFailure(label, wantsJsonOutput(input))
      )
  )
}

/**
 * A command's help: its one-line `summary` (in its parent's list), its `description` and any
 * `examples`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const withHelp = (help: {
  readonly summary: string
  readonly description: string
  readonly examples?: ReadonlyArray<Command.Command.Example>
}) =>
<const Name extends string, Input, E, R, ContextInput>(
  self: Command.Command<Name, Input, ContextInput, E, R>
): Command.Command<Name, Input, ContextInput, E, R> => {
  const described = self.pipe(Command.withDescription(help.description), Command.withShortDescription(help.summary))
  return help.examples === undefined ? described : described.pipe(Command.withExamples(help.examples))
}
