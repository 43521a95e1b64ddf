/** Flags every workspace command shares, defined once so their names and help agree. */
import { Flag } from "effect/cli"

/** `--workspace DIR` (required). */
export const workspaceFlag = (description = "Workspace root (required)") =>
  Flag.String("workspace").pipe(Flag.withMetavar("DIR"), Flag.withDescription(description))

/** `--db FILE` (optional; the default lives beside the workspace). */
export const dbFlag = Flag.String("db").pipe(
  Flag.withMetavar("FILE"),
  Flag.withDescription("Patch history database (default <workspace>/.forkjoin/history.db, created on first use)"),
  Flag.optional
)
