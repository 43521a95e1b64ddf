/**
 * Which workspace a folder is, for callers outside the engine (the command line): its
 * environment id as `.forkjoin/identity.json` keeps it, and whether the folder was moved or
 * copied since it was last opened. Opening records the new path, so a move is reported once.
 *
 * @since 0.1.0
 */
export { type WorkspaceIdentity, workspaceIdentityAt } from "./internal/identity.ts"
