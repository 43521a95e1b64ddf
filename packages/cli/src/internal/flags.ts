/**
 * Flags every workspace command shares, defined once so their names and help agree. It does
 * not own what the commands do with them (`workspace.ts` resolves both).
 *
 * @since 0.1.0
 */
import { Flag } from "effect/cli"

/**
 * `--workspace DIR` (required).
 *
 * @category constructors
 * @since 0.1.0
 */
export const workspaceFlag = (description = "Workspace root (required)") =>
  Flag.String("workspace").pipe(Flag.withMetavar("DIR"), Flag.withDescription(description))

/**
 * `--workspace DIR`, defaulting to the current directory (commands that only read it or work
 * beside it: probe, gate, config explain).
 *
 * @category constructors
 * @since 0.1.0
 */
export const workspaceFlagOrCurrent = (description: string) =>
  workspaceFlag(`${description} (default: the current directory)`).pipe(Flag.withDefault("."))

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
