/**
 * What a workspace remembers of its history (SPEC §4.5, issue 9): `.forkjoin/identity.json`,
 * beside the lock, names each history database the workspace used (by its path: relative to
 * the state folder for the default `history.db`, absolute and real otherwise), that
 * database's history id, the environment, and the last commit ordinal seen. At open the
 * engine compares it with the identity kept inside the database (`HistoryStore.identity`): a
 * missing, emptied, different or older database is refused with `history_missing` before
 * anything is written, unless the open is a deliberate reset, which adopts the database and
 * records the reset in it. The file is replaced atomically (temp file and rename); the last
 * ordinal is updated after commits, at most once a second while an engine lives and when it
 * closes (a write costs about as much as a third of a small apply; a lagging ordinal only
 * makes the older-copy check less strict).
 *
 * The file also keeps the workspace's environment id and the real path it was last opened at
 * (schema version 2), so the id survives moving or renaming the folder: history, conflicts and
 * runs are keyed by it. A version-1 file (no id) gets the id the path gave it until now. A
 * folder opened at a new path is a move, unless the old path still holds a workspace with the
 * same id and history: then it is a copy and gets an id of its own (`workspaceIdentity`).
 *
 * It owns the file, the verdict and the refusal's wording. It does not own the database's
 * identity (the store), nor when the check runs (`Engine.ts`).
 */
import type { HistoryIdentity, HistoryReset, HistoryResetReason, HistoryStore, StoreError } from "@forkjoin/history/HistoryStore"
import { sha256 } from "@forkjoin/patch/Bytes"
import { errnoOf } from "@forkjoin/patch/SystemError"
import { EnvironmentId } from "@forkjoin/schema/Ids"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { fromStoreError } from "../HistoryFailure.ts"
import { openStateDirectory, STATE_DIRECTORY } from "../Policy.ts"

/** The file's name inside the state folder. */
export const IDENTITY_FILE = "identity.json"

/**
 * The default database's file name in the state folder (`<state folder>/history.db`), which is
 * also its key here: no `--db` needed to name it. `Workspace.defaultDatabaseOf` builds its path.
 */
export const DEFAULT_DB_KEY = "history.db"

/** One remembered history: the database it lives in, its id, and how far this workspace saw it go. */
export const RememberedHistory = Schema.Struct({
  db: Schema.String,
  historyId: Schema.String,
  environmentId: Schema.String,
  lastOrdinal: Schema.Int
})

/** A remembered history. */
export type RememberedHistory = typeof RememberedHistory.Type

/** `identity.json` as the first version wrote it: the histories only (the id came from the path). */
const IdentityFileV1 = Schema.Struct({
  schemaVersion: Schema.Literal(1),
  histories: Schema.Array(RememberedHistory)
})

/** `identity.json` (version 2): the workspace's environment id, where it was last opened, its histories. */
export const IdentityFile = Schema.Struct({
  schemaVersion: Schema.Literal(2),
  environmentId: EnvironmentId,
  /** The real path the workspace was last opened at; another path at open is a move or a copy. */
  root: Schema.String,
  histories: Schema.Array(RememberedHistory)
})

/** The parsed file. */
export type IdentityFile = typeof IdentityFile.Type

/** What a readable file holds: either version, or nothing (no file yet). */
type StoredIdentity = IdentityFile | typeof IdentityFileV1.Type | undefined

const decodeFile = Schema.decodeUnknownSync(Schema.fromJsonString(Schema.Union([IdentityFile, IdentityFileV1])))

/**
 * The id a workspace's real path gave it before ids were kept (`env-` and 20 hex digits of the
 * path's hash): a new workspace still starts with it, and a version-1 file keeps it.
 */
export const pathDerivedEnvironmentId = (realRoot: string): EnvironmentId =>
  EnvironmentId.make(`env-${sha256(realRoot).slice("sha256:".length, "sha256:".length + 20)}`)

/**
 * A copy's own id, derived from the original's id and the copy's path: every process that opens
 * the copy at once picks the same one.
 */
const copyEnvironmentId = (original: EnvironmentId, realRoot: string): EnvironmentId =>
  EnvironmentId.make(`env-${sha256(`${original}\n${realRoot}`).slice("sha256:".length, "sha256:".length + 20)}`)

/**
 * The key a database is remembered under: its path relative to the state folder when it is
 * inside (so the default one is `history.db` wherever the workspace lives), else its real
 * absolute path.
 */
export const databaseKey = (stateDir: string, location: string): string => {
  let real = location
  try {
    real = path.join(fs.realpathSync(path.dirname(location)), path.basename(location))
  } catch {
    // the folder is gone: the path as given is the best name
  }
  const rel = path.relative(stateDir, real)
  return rel !== "" && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel.split(path.sep).join("/") : real
}

/** Reads `identity.json`; a missing file is undefined, an unreadable one is refused. */
export const readIdentityFile = (file: string): StoredIdentity | EngineError => {
  let text: string
  try {
    text = fs.readFileSync(file, "utf8")
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return undefined
    return new EngineError({
      code: "history_unavailable",
      stage: Stage.persist,
      paths: [],
      message: `Cannot read '${file}' (${errnoOf(error) ?? String(error)}), which records this workspace's history; check its permissions.`,
      cause: error
    })
  }
  try {
    return decodeFile(text)
  } catch (error) {
    return new EngineError({
      code: "history_unavailable",
      stage: Stage.persist,
      paths: [],
      message: `'${file}' is damaged; it records which history this workspace has. Restore it from a backup, or delete it ` +
        "to accept the history database as it is (a workspace that was moved then loses its history).",
      cause: error
    })
  }
}

/** Replaces `identity.json` atomically (a temp file renamed over it); readers never see half a file. */
export const writeIdentityFile = (file: string, value: IdentityFile): void => {
  const temp = `${file}.${process.pid}-${randomBytes(4).toString("hex")}.tmp`
  try {
    fs.writeFileSync(temp, JSON.stringify(value, null, 2) + "\n", { flag: "wx" })
    fs.renameSync(temp, file)
  } catch (error) {
    fs.rmSync(temp, { force: true })
    throw error
  }
}

/** Who the workspace is: its environment id and the real path it is opened at. */
interface Self {
  readonly environmentId: EnvironmentId
  readonly root: string
}

/** `current` (either version, or none) with `entry` in place of whatever was remembered for its database. */
const withEntry = (current: StoredIdentity, self: Self, entry: RememberedHistory): IdentityFile => ({
  schemaVersion: 2,
  environmentId: self.environmentId,
  root: self.root,
  histories: [...(current?.histories ?? []).filter((h) => h.db !== entry.db), entry]
})

/**
 * The workspace as its identity file names it: its environment id, and, when it was opened
 * at another path before, whether it was moved (`moved`, the old path still free of it) or
 * copied (`copiedFrom`: the old path still holds the same workspace with the same history, so
 * this folder got an id of its own and starts an empty history).
 */
export interface WorkspaceIdentity {
  readonly environmentId: EnvironmentId
  readonly moved: { readonly from: string; readonly to: string } | undefined
  readonly copiedFrom: string | undefined
}

/** True when the workspace at `from` is still the one `stored` describes (same id, a shared history). */
const stillThere = (from: string, stored: IdentityFile): boolean => {
  const there = readIdentityFile(path.join(from, STATE_DIRECTORY, IDENTITY_FILE))
  if (there === undefined || there instanceof EngineError || there.schemaVersion !== 2) return false
  if (there.environmentId !== stored.environmentId) return false
  return there.histories.some((h) => stored.histories.some((s) => s.historyId === h.historyId))
}

/**
 * Reads (and when needed updates) the identity of the workspace whose real path is `root`
 * and state folder `stateDir` (already checked). No file: the path-derived id, nothing
 * written (the first commit writes the file). A version-1 file: the path-derived id, written
 * in. Opened at its recorded path: the recorded id. At another path: a move keeps the id and
 * records the new path (so it is reported once); a copy gets its own id (see
 * `WorkspaceIdentity`). A damaged file is refused (`history_unavailable`); a failed write
 * only means the next open decides again.
 */
export const workspaceIdentity = (stateDir: string, root: string): WorkspaceIdentity | EngineError => {
  const file = path.join(stateDir, IDENTITY_FILE)
  const stored = readIdentityFile(file)
  if (stored instanceof EngineError) return stored
  const same = (environmentId: EnvironmentId): WorkspaceIdentity => ({ environmentId, moved: undefined, copiedFrom: undefined })
  if (stored === undefined) return same(pathDerivedEnvironmentId(root))
  const write = (self: Self): void => {
    try {
      writeIdentityFile(file, { schemaVersion: 2, environmentId: self.environmentId, root: self.root, histories: stored.histories })
    } catch {
      // best effort, see above
    }
  }
  if (stored.schemaVersion === 1) {
    const environmentId = pathDerivedEnvironmentId(root)
    write({ environmentId, root })
    return same(environmentId)
  }
  if (stored.root === root) return same(stored.environmentId)
  if (stillThere(stored.root, stored)) {
    const environmentId = copyEnvironmentId(stored.environmentId, root)
    write({ environmentId, root })
    return { environmentId, moved: undefined, copiedFrom: stored.root }
  }
  write({ environmentId: stored.environmentId, root })
  return { environmentId: stored.environmentId, moved: { from: stored.root, to: root }, copiedFrom: undefined }
}

/**
 * `workspaceIdentity` for a caller that has only the workspace's real path: a state folder that
 * is missing, or that `openStateDirectory` refuses, is left alone (the path-derived id), as is
 * a damaged file (the engine's open refuses it).
 */
export const workspaceIdentityAt = (realRoot: string): WorkspaceIdentity => {
  const fallback: WorkspaceIdentity = { environmentId: pathDerivedEnvironmentId(realRoot), moved: undefined, copiedFrom: undefined }
  const stat = fs.lstatSync(path.join(realRoot, STATE_DIRECTORY), { throwIfNoEntry: false })
  if (stat === undefined || !stat.isDirectory()) return fallback
  const state = openStateDirectory(realRoot)
  if (Result.isFailure(state)) return fallback
  const identity = workspaceIdentity(state.success, realRoot)
  return identity instanceof EngineError ? fallback : identity
}

/**
 * How a database compares with what the workspace remembers of it.
 * - `Untracked`: an in-memory database, never remembered;
 * - `New`: nothing remembered for this database: it is adopted as it is;
 * - `Same`: the remembered history, at least as far as the workspace saw it go (counting open
 *   intents, which startup repair may still turn into records);
 * - `Mismatch`: missing (no history id), different (another id) or older (fewer records).
 */
export type Verdict =
  | { readonly _tag: "Untracked" }
  | { readonly _tag: "New" }
  | { readonly _tag: "Same"; readonly remembered: RememberedHistory }
  | { readonly _tag: "Mismatch"; readonly remembered: RememberedHistory; readonly reason: HistoryResetReason }

/** The verdict on `identity` given what is `remembered` of its database (pure). */
export const judge = (
  remembered: RememberedHistory | undefined,
  identity: HistoryIdentity,
  environmentId: EnvironmentId
): Verdict => {
  if (identity.location === undefined) return { _tag: "Untracked" }
  if (remembered === undefined) return { _tag: "New" }
  if (identity.historyId === undefined) return { _tag: "Mismatch", remembered, reason: "missing" }
  if (identity.historyId !== remembered.historyId) return { _tag: "Mismatch", remembered, reason: "different" }
  // A moved workspace is another environment: its ordinals start over, so only compare our own.
  if (remembered.environmentId === environmentId && identity.lastOrdinal + identity.openIntents < remembered.lastOrdinal) {
    return { _tag: "Mismatch", remembered, reason: "older" }
  }
  return { _tag: "Same", remembered }
}

/** The `history_missing` refusal: what is wrong, that nothing was written, how to restore or reset. */
export const historyMissing = (
  verdict: Extract<Verdict, { readonly _tag: "Mismatch" }>,
  identity: HistoryIdentity,
  context: { readonly root: string; readonly key: string }
): EngineError => {
  const db = identity.location ?? context.key
  const { remembered } = verdict
  const ours = `${remembered.historyId}, up to record #${remembered.lastOrdinal}`
  const reset = `forkjoin repair --workspace '${context.root}'${context.key === DEFAULT_DB_KEY ? "" : ` --db '${db}'`} --reset-history`
  const problem = verdict.reason === "missing"
    ? identity.lastOrdinal === 0
      ? `The history database '${db}' is missing or empty, but this workspace has a history (${ours})`
      : `The history database '${db}' has no history id, so it is not this workspace's history (${ours})`
    : verdict.reason === "different"
    ? `The history database '${db}' belongs to another history (${identity.historyId}), not to this workspace's (${ours})`
    : `The history database '${db}' holds this workspace's history only up to record #${identity.lastOrdinal}, but the ` +
      `workspace has seen record #${remembered.lastOrdinal}: it is an older copy`
  const restore = verdict.reason === "older" ? "Restore the newest copy" : "Restore this workspace's database (from a backup)"
  return new EngineError({
    code: "history_missing",
    stage: Stage.persist,
    paths: [],
    message: `${problem}; nothing was written. ${restore} to '${db}' and retry, or, to ` +
      `${verdict.reason === "missing" ? "start a new history" : "continue with this database"} deliberately, run: ${reset}`
  })
}

/**
 * The history an engine is bound to: its id (undefined for an in-memory database), the reset
 * the open made (only with `resetHistory`), `remember`, which notes that the history reached
 * an ordinal (written to `identity.json` at most once a second), and `flush`, which writes what
 * is noted (at close). Writes are best effort: a failed one only weakens the next check.
 */
export interface HistoryBinding {
  readonly historyId: string | undefined
  readonly reset: HistoryReset | undefined
  readonly remember: (ordinal: number) => void
  readonly flush: () => void
}

const untracked: HistoryBinding = { historyId: undefined, reset: undefined, remember: () => undefined, flush: () => undefined }

/** How often a live engine rewrites the last ordinal at most. */
const FLUSH_INTERVAL_MS = 1_000

/**
 * Checks the store's database against what the workspace remembers (see `judge`) and binds the
 * engine to it: adopts a new database, refuses a mismatch with `history_missing`, or with
 * `resetHistory` adopts the mismatching database and records the reset.
 */
export const bindHistory = (deps: {
  readonly store: HistoryStore["Service"]
  readonly stateDir: string
  readonly root: string
  readonly environmentId: EnvironmentId
  readonly resetHistory: boolean
}): Effect.Effect<HistoryBinding, EngineError> =>
  Effect.gen(function*() {
    const { environmentId, store } = deps
    const fail = (e: StoreError) => fromStoreError(e, Stage.persist, [], "Checking the history database's identity failed")
    const file = path.join(deps.stateDir, IDENTITY_FILE)
    // The file first, then the database: a process that writes the file has already
    // established (or advanced) the database, so reading in this order never sees the file
    // ahead of the database (several processes opening a new workspace at once).
    const current = readIdentityFile(file)
    const identity = yield* store.identity(environmentId).pipe(Effect.mapError(fail))
    if (identity.location === undefined) return untracked
    if (current instanceof EngineError) return yield* current
    const key = databaseKey(deps.stateDir, identity.location)
    const verdict = judge(current?.histories.find((h) => h.db === key), identity, environmentId)
    const self: Self = { environmentId, root: deps.root }

    const bound = (historyId: string, reset: HistoryReset | undefined, lastOrdinal: number): HistoryBinding => {
      let noted = lastOrdinal
      // -1: the first flush always checks the file (a new history id must be written at once).
      let written = -1
      // Wall-clock throttling of file writes, like the store's lock back-off: not domain time.
      let flushedAt = 0
      const flush = (): void => {
        flushedAt = Date.now()
        if (noted <= written) return
        try {
          const now = readIdentityFile(file)
          const known = now instanceof EngineError ? undefined : now?.histories.find((h) => h.db === key)
          // Another process may have written a later ordinal of the same history meanwhile.
          if (known?.historyId !== historyId || known.environmentId !== environmentId || known.lastOrdinal < noted) {
            writeIdentityFile(file, withEntry(now instanceof EngineError ? undefined : now, self, { db: key, historyId, environmentId, lastOrdinal: noted }))
          }
          written = noted
        } catch {
          // best effort, see HistoryBinding
        }
      }
      const remember = (ordinal: number): void => {
        noted = Math.max(noted, ordinal)
        if (Date.now() - flushedAt >= FLUSH_INTERVAL_MS) flush()
      }
      flush()
      return { historyId, reset, remember, flush }
    }

    switch (verdict._tag) {
      case "Untracked":
        return untracked
      case "Same":
        return bound(verdict.remembered.historyId, undefined, identity.lastOrdinal)
      case "New": {
        const established = yield* store.establishIdentity(environmentId, yield* Clock.currentTimeMillis).pipe(Effect.mapError(fail))
        return established.historyId === undefined ? untracked : bound(established.historyId, undefined, established.lastOrdinal)
      }
      case "Mismatch": {
        if (!deps.resetHistory) return yield* historyMissing(verdict, identity, { root: deps.root, key })
        const reset = yield* store.resetIdentity(environmentId, yield* Clock.currentTimeMillis, {
          historyId: verdict.remembered.historyId,
          lastOrdinal: verdict.remembered.lastOrdinal,
          reason: verdict.reason
        }).pipe(Effect.mapError(fail))
        // The ordinal now restarts from what this database holds: write it even if lower.
        try {
          writeIdentityFile(file, withEntry(current, self, { db: key, historyId: reset.historyId, environmentId, lastOrdinal: identity.lastOrdinal }))
        } catch {
          // best effort, see HistoryBinding
        }
        return bound(reset.historyId, reset, identity.lastOrdinal)
      }
    }
  })
