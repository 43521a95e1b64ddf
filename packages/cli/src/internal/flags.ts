/**
 * Flags every workspace command shares, defined once so their names and help agree. It does
 * not own what the commands do with them (`workspace.ts` resolves both).
 *
 * @since 0.1.0
 */
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
