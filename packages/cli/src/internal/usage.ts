/**
 * How the CLI reports a usage error: a flag or argument effect/cli refuses, an unknown command
 * (also when `--help` follows it) or a `UsageError` a command raises. As text it is
 * `error: <message>` and a pointer to the command's help on stderr; with `--json` it is one
 * `{"ok":false,"error":{...}}` line on stdout, like every other `--json` failure. Either way
 * the exit code is 2 (`processExitCode`, `failureOutput`).
 *
 * It does not own the exit code nor how other failures print (`errors.ts`).
 *
 * @since 0.1.0
 */
import { CliError, CliOutput, type Command } from "effect/cli"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { isIdFlagError } from "./flags.ts"
import { writeStderr, writeStdout } from "./output.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * The `error` of a usage error's `--json` line. The engine's error shape (`code`, `stage`,
 * `stageName`, `paths`, `message`): the invocation never became a request, so it is refused at
 * stage 1 (`normalize`), where the engine refuses a malformed request. `code` is
 * `request_invalid` when only id flags were refused (the engine's code for a bad id), else
 * `usage_invalid`; `command` is the command whose `--help` tells the usage; `suggestions` are
 * the near names effect/cli offers for an unknown command or flag.
 *
 * @category models
 * @since 0.1.0
 */
export const UsageErrorBody = Schema.Struct({
  code: Schema.Literals(["usage_invalid", "request_invalid"]),
  stage: Schema.Literal(Stage.normalize),
  stageName: Schema.Literal("normalize"),
  paths: Schema.Array(Schema.String),
  message: Schema.String,
  command: Schema.String,
  suggestions: Schema.optional(Schema.Array(Schema.String))
})

/**
 * @category models
 * @since 0.1.0
 */
export type UsageErrorBody = typeof UsageErrorBody.Type

// -------------------------------------------------------------------------------------
// reading the command line
// -------------------------------------------------------------------------------------

// The words effect/cli reads as a boolean flag's value (`--json no`).
const isTrue = Schema.is(Schema.Literals(["true", "yes", "on", "1", "y"]))
const isFalse = Schema.is(Schema.Literals(["false", "no", "off", "0", "n"]))

/** The arguments effect/cli reads as flags and values: everything before a lone `--`. */
const flagArea = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const end = argv.indexOf("--")
  return end === -1 ? argv : argv.slice(0, end)
}

/**
 * True when the command line asks for `--json`, read as effect/cli reads a boolean flag: the
 * last of `--json`, `--json=V`, `--json V` (V a boolean word such as `false` or `no`) and
 * `--no-json` decides; anything after `--` is an operand. A usage error is reported before any
 * flag is parsed, so its output form is decided from the raw arguments.
 *
 * @category predicates
 * @since 0.1.0
 */
export const wantsJson = (argv: ReadonlyArray<string>): boolean => {
  const args = flagArea(argv)
  let json = false
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "--no-json") json = false
    else if (arg.startsWith("--json=")) json = !isFalse(arg.slice("--json=".length))
    else if (arg === "--json") {
      const next = args[i + 1]
      json = next === undefined || !isFalse(next)
      if (next !== undefined && (isTrue(next) || isFalse(next))) i++
    }
  }
  return json
}

/** True when `arg` is a flag to effect/cli's lexer (not `-`, not a negative number). */
const isFlagToken = (arg: string): boolean => arg.startsWith("-") && arg !== "-" && !/^-(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test(arg)

/** True when the command line asks for help (`--help`, `-h`, alone or in a cluster such as `-vh`). */
const wantsHelp = (args: ReadonlyArray<string>): boolean =>
  args.some((arg) =>
    arg === "--help" || (arg.startsWith("--help=") && isTrue(arg.slice("--help=".length))) ||
    (isFlagToken(arg) && !arg.startsWith("--") && arg.slice(1).split("=")[0]!.includes("h"))
  )

/** Global flags that take a value (`--completions bash`): the value is not a command name. */
const GLOBAL_VALUE_FLAGS: ReadonlySet<string> = new Set(["--completions"])

/** The edit distance of `a` and `b` (insert, delete, substitute), one row at a time. */
const distance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      row.push(Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)))
    }
    previous = row
  }
  return previous[b.length]!
}

/** The names at the smallest edit distance from `name`, if that is at most 2 (effect/cli's rule). */
const nearest = (name: string, names: ReadonlyArray<string>): ReadonlyArray<string> => {
  const scored = names.map((n) => [distance(name, n), n] as const).filter(([d]) => d <= 2)
  const best = Math.min(...scored.map(([d]) => d))
  return scored.filter(([d]) => d === best).map(([, n]) => n)
}

/**
 * The unknown command a help request names (`forkjoin frobnicate --help`), as effect/cli's
 * own `UnknownSubcommand` error with the near names it would suggest; none when the command line
 * asks for no help or every name is known. effect/cli runs `--help` before it reports what it
 * could not parse, so it would print the help of the last command it knew, exit 0.
 *
 * The walk follows effect/cli's parser: below a command with subcommands (which take no
 * arguments and have no flags of their own here) the first value is the subcommand; a command
 * without subcommands takes values as its arguments, so nothing after it is a command name.
 *
 * @category constructors
 * @since 0.1.0
 */
export const unknownCommandInHelp = (
  root: Command.Command.Any,
  argv: ReadonlyArray<string>
): { readonly commandPath: ReadonlyArray<string>; readonly error: CliError.UnknownSubcommand } | undefined => {
  const args = flagArea(argv)
  if (!wantsHelp(args)) return undefined
  let command = root
  const commandPath = [root.name]
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (isFlagToken(arg)) {
      if (GLOBAL_VALUE_FLAGS.has(arg)) i++
      continue
    }
    if (command.subcommands.length === 0) return undefined
    const subcommands = command.subcommands.flatMap((group) => group.commands)
    const next = subcommands.find((sub) => sub.name === arg || sub.alias === arg)
    if (next === undefined) {
      const listed = subcommands.filter((sub) => !sub.unlisted).flatMap((sub) => sub.alias === undefined ? [sub.name] : [sub.name, sub.alias])
      return {
        commandPath,
        error: new CliError.UnknownSubcommand({ subcommand: arg, parent: [...commandPath], suggestions: [...nearest(arg, listed)] })
      }
    }
    command = next
    commandPath.push(next.name)
  }
  return undefined
}

// -------------------------------------------------------------------------------------
// rendering
// -------------------------------------------------------------------------------------

/** Where a command's usage is told, for the end of a usage error. */
const helpHint = (command: string): string => `Run '${command} --help' for usage.`

/**
 * The `--json` line of a usage error: `message` says what was wrong and where the usage is
 * (`Run 'forkjoin apply --help' for usage.`); `command` is the full command (`forkjoin apply`).
 *
 * @category combinators
 * @since 0.1.0
 */
export const usageErrorLine = (options: {
  readonly command: string
  readonly messages: ReadonlyArray<string>
  readonly code?: UsageErrorBody["code"]
  readonly suggestions?: ReadonlyArray<string>
}): string => {
  const message = `${options.messages.map((m) => m.replace(/\.$/, "")).join("; ")}. ${helpHint(options.command)}`
  const error = UsageErrorBody.make({
    code: options.code ?? "usage_invalid",
    stage: Stage.normalize,
    stageName: "normalize",
    paths: [],
    message,
    command: options.command,
    ...(options.suggestions === undefined || options.suggestions.length === 0 ? {} : { suggestions: options.suggestions })
  })
  return JSON.stringify({ ok: false, error }) + "\n"
}

/** A refused flag or command without the "Did you mean" block its message ends with (the JSON line lists them). */
const withoutSuggestions = (error: CliError.NonShowHelpErrors): CliError.NonShowHelpErrors => {
  switch (error._tag) {
    case "UnknownSubcommand":
      return new CliError.UnknownSubcommand({ subcommand: error.subcommand, parent: error.parent, suggestions: [] })
    case "UnrecognizedOption":
      return new CliError.UnrecognizedOption({ option: error.option, command: error.command, suggestions: [] })
    default:
      return error
  }
}

/**
 * Prints the errors effect/cli found in a command line for `commandPath`: with `json`, the one
 * `--json` line on stdout; otherwise `error: ...` lines (a refused id flag as `request_invalid`,
 * the refusal ids get everywhere) and the help pointer on stderr. Never the help text itself:
 * stdout stays clean for `--json` consumers.
 *
 * @category constructors
 * @since 0.1.0
 */
export const presentUsageErrors = (
  commandPath: ReadonlyArray<string>,
  errors: ReadonlyArray<CliError.NonShowHelpErrors>,
  json: boolean
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const command = commandPath.join(" ")
    const formatter = yield* CliOutput.Formatter
    if (json) {
      const line = usageErrorLine({
        command,
        code: errors.length > 0 && errors.every(isIdFlagError) ? "request_invalid" : "usage_invalid",
        messages: errors.map((e) => formatter.formatCliError(withoutSuggestions(e))),
        suggestions: errors.flatMap((e) => e._tag === "UnknownSubcommand" || e._tag === "UnrecognizedOption" ? e.suggestions : [])
      })
      yield* writeStdout(line)
      return
    }
    const lines = errors.map((e) => `error: ${isIdFlagError(e) ? "request_invalid: " : ""}${formatter.formatCliError(e)}`)
    yield* writeStderr(`${lines.join("\n")}\n${helpHint(command)}\n`)
  })

/**
 * effect/cli's presenter, except that an invalid invocation prints only its errors (text on
 * stderr, or the `--json` line when `argv` asks for JSON), never the help text.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerPresenter = (argv: ReadonlyArray<string>) =>
  CliOutput.layerPresenter({
    present: (event) =>
      event._tag === "InvalidInvocation"
        ? presentUsageErrors(event.commandPath, event.errors, wantsJson(argv))
        : CliOutput.defaultPresenter.present(event)
  })
