/**
 * Flags every workspace command shares, defined once so their names and help agree, and the
 * shapes most flags take (an optional value, an off-by-default switch, `--json`). It does not
 * own what the commands do with them (`workspace.ts` resolves the workspace and the database).
 *
 * @since 0.1.0
 */
import { ThreadIdInput } from "@forkjoin/schema/Ids"
import { type CliError, Flag } from "effect/cli"
import * as Option from "effect/Option"

/**
 * What `--workspace` holds when it was not given: the nearest enclosing workspace is used (see
 * `resolveWorkspace`). A NUL can never come from a command line, so no path is mistaken for it.
 *
 * @category models
 * @since 0.1.0
 */
export const NEAREST_WORKSPACE = "\u0000nearest"

const WORKSPACE_DEFAULT = "default: the nearest folder with .forkjoin above the current one, else the git root, else the current folder"

/**
 * `--workspace DIR`, defaulting to the nearest enclosing workspace (the same for every command);
 * a folder inside a workspace means that workspace.
 *
 * @category constructors
 * @since 0.1.0
 */
export const workspaceFlag = (description = "Workspace root") =>
  Flag.String("workspace").pipe(
    Flag.withMetavar("DIR"),
    Flag.withDescription(`${description.replace(/ \(required\)$/, "")} (${WORKSPACE_DEFAULT})`),
    Flag.optional,
    Flag.map(Option.getOrElse(() => NEAREST_WORKSPACE))
  )

/**
 * `--workspace DIR` for commands that only read it or work beside it (probe, gate, config
 * explain): the same default as `workspaceFlag`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const workspaceFlagOrCurrent = (description: string) => workspaceFlag(description)

/** The flags whose values are ids (threads, turns): a bad one is `request_invalid`. */
const ID_FLAGS: ReadonlySet<string> = new Set(["thread", "turn"])

/**
 * True when a command-line error is a refused id flag value (`--thread`, `--turn`): it is
 * shown as `request_invalid` with the schema's reason (the id and the rule).
 *
 * @category predicates
 * @since 0.1.0
 */
export const isIdFlagError = (error: CliError.CliError): boolean =>
  error._tag === "InvalidValue" && error.kind === "flag" && ID_FLAGS.has(error.option)

/**
 * `--db FILE` (optional; the default lives beside the workspace).
 *
 * @category constructors
 * @since 0.1.0
 */
export const dbFlag = Flag.String("db").pipe(
  Flag.withMetavar("FILE"),
  Flag.withDescription("Patch history database (default <workspace>/.forkjoin/history.db, created on first use)"),
  Flag.optional
)

/**
 * `--workspace DIR` and `--db FILE`, in that order (`description` as for `workspaceFlag`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const workspaceFlags = (description?: string) => ({ workspace: workspaceFlag(description), db: dbFlag })

/**
 * What `workspaceFlags` hold, as the command programs take them: the workspace and the `--db`
 * file (undefined when not given).
 *
 * @category combinators
 * @since 0.1.0
 */
export const workspaceInput = (input: { readonly workspace: string; readonly db: Option.Option<string> }) => ({
  workspace: input.workspace,
  db: Option.getOrUndefined(input.db)
})

/**
 * `--NAME METAVAR`, a text value that is absent unless given.
 *
 * @category constructors
 * @since 0.1.0
 */
export const optionalText = (name: string, metavar: string, description: string) =>
  Flag.String(name).pipe(Flag.withMetavar(metavar), Flag.withDescription(description), Flag.optional)

/**
 * `--NAME METAVAR`, a whole number that is absent unless given.
 *
 * @category constructors
 * @since 0.1.0
 */
export const optionalInt = (name: string, metavar: string, description: string) =>
  Flag.Int(name).pipe(Flag.withMetavar(metavar), Flag.withDescription(description), Flag.optional)

/**
 * `--NAME`, a switch that is off unless given.
 *
 * @category constructors
 * @since 0.1.0
 */
export const switchFlag = (name: string, description: string) =>
  Flag.Boolean(name).pipe(Flag.withDescription(description), Flag.withDefault(false))

/**
 * `--json`, described by `description` (what the one JSON line holds).
 *
 * @category constructors
 * @since 0.1.0
 */
export const jsonFlag = (description: string) => switchFlag("json", description)

/**
 * `--json` of a command that prints one JSON line of `shape`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const jsonLineFlag = (shape: string) => jsonFlag(`Print one JSON line: ${shape}`)

/**
 * `--thread METAVAR`: a thread id (a bad one is `request_invalid`, see `isIdFlagError`), absent
 * unless given.
 *
 * @category constructors
 * @since 0.1.0
 */
export const threadFlag = (metavar: string, description: string) =>
  Flag.String("thread").pipe(Flag.withSchema(ThreadIdInput), Flag.withMetavar(metavar), Flag.withDescription(description), Flag.optional)
