/**
 * Git export (SPEC §4.7): turns a thread's applied records into git commits on
 * `refs/forkjoin/<thread>` with isomorphic-git, object by object (`writeBlob`, `writeTree`,
 * `writeCommit`, then one `writeRef`), so no worktree or index is ever touched. Commits are
 * deterministic: a fixed author and committer, the record's commit time, and trailers
 * `Forkjoin-Record`, `Forkjoin-Authority`, `Forkjoin-Provenance`, `Forkjoin-Exactness`.
 * Re-running continues after the record named by the ref's head commit.
 *
 * Before a record that touches a file the exported tree does not hold yet, a baseline commit
 * adds that file's recorded `before` content, so `git log -p` shows the record's real change
 * rather than a whole-file add. Verification records (which change nothing) are skipped; a
 * change whose content was not recorded keeps the previous tree entry and is named in the
 * commit message.
 *
 * It owns the mapping of records to git objects. It does not own the repository (it writes
 * into an existing git directory, or initialises a bare one in a missing or empty folder, and
 * refuses any other folder so user files never get git's files mixed in) nor history reads
 * beyond its query.
 *
 * @since 0.1.0
 */
import type { EnvironmentId, PatchHistoryRecord, Snapshot } from "@forkjoin/schema"
import { PatchHistoryRecord as RecordSchema } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import git from "isomorphic-git"
import * as fs from "node:fs"
import * as path from "node:path"
import type { StoreError } from "./HistoryStore.ts"
import * as SnapshotStore from "./SnapshotStore.ts"
import { Sqlite } from "./Sqlite.ts"

/**
 * A git-side failure: which isomorphic-git step failed and why.
 *
 * @category errors
 * @since 0.1.0
 */
export class GitExportError extends Schema.TaggedError<GitExportError>()("GitExportError", {
  operation: Schema.String,
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return `${this.operation}: ${this.detail}`
  }
}

/**
 * What to export: the thread, its environment, and the git directory to write into
 * (created as a bare repository when missing or empty; any other folder is refused).
 *
 * @category models
 * @since 0.1.0
 */
export interface ExportRequest {
  readonly environmentId: EnvironmentId
  readonly threadId: string
  readonly gitdir: string
}

/**
 * What an export did: the ref, its head (null when the thread has no applied record), how
 * many records became commits this run, and how many baseline commits were added.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExportResult {
  readonly ref: string
  readonly head: string | null
  readonly exported: number
  readonly baselines: number
  readonly skipped: number
}

/** The fixed identity of exported commits (deterministic objects). */
const AUTHOR = { name: "forkjoin", email: "forkjoin@localhost" } as const

/**
 * The ref of a thread: `refs/forkjoin/<thread>` with every byte outside `[A-Za-z0-9_-]`
 * written `%XX`, so any thread id makes a valid, unambiguous ref name.
 *
 * @category constructors
 * @since 0.1.0
 */
export const refOf = (threadId: string): string =>
  `refs/forkjoin/${
    Array.from(new TextEncoder().encode(threadId), (b) =>
      /[A-Za-z0-9_-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join("")
  }`

const SQL = {
  ordinalOf: "SELECT commit_ordinal FROM records WHERE environment_id = ? AND record_id = ?",
  records: "SELECT record_json FROM records WHERE environment_id = ? AND thread_id = ? AND outcome = 'applied' " +
    "AND commit_ordinal > ? ORDER BY commit_ordinal"
} as const

const decodeRecord = Schema.decodeUnknownSync(Schema.fromJsonString(RecordSchema))

type Entry = { readonly oid: string; readonly mode: string }

const modeOf = (s: Snapshot): string => ((s.mode & 0o111) !== 0 ? "100755" : "100644")

/**
 * What `dir` is to an export: a git directory (`HEAD`, `objects/`, `refs/`, as git itself
 * requires), a place to initialise one (missing or an empty folder), or a refusal saying why.
 */
const gitDirectoryOf = (dir: string): "git" | "init" | GitExportError => {
  const refuse = (detail: string) => new GitExportError({ operation: "GitExport.open", detail })
  try {
    const stat = fs.statSync(dir, { throwIfNoEntry: false })
    if (stat === undefined) return "init"
    if (!stat.isDirectory()) {
      return refuse(`${dir} is a file, not a git directory; pass a git directory, an empty folder or a path that does not exist yet`)
    }
    const at = (name: string) => fs.statSync(path.join(dir, name), { throwIfNoEntry: false })
    if (at("HEAD")?.isFile() === true && at("objects")?.isDirectory() === true && at("refs")?.isDirectory() === true) return "git"
    const entries = fs.readdirSync(dir)
    if (entries.length === 0) return "init"
    if (entries.includes(".git")) {
      return refuse(`${dir} is a git worktree, not a git directory; pass its git directory (${path.join(dir, ".git")})`)
    }
    return refuse(
      `${dir} is a non-empty folder that is not a git directory (no HEAD, objects/ and refs/); exporting would write ` +
        `git's files among yours, so nothing was written. Pass a git directory (such as the workspace's .git), ` +
        `an empty folder or a path that does not exist yet`
    )
  } catch (e) {
    return new GitExportError({
      operation: "GitExport.open",
      detail: `cannot inspect ${dir} (${e instanceof Error ? e.message : String(e)})`,
      cause: e
    })
  }
}

const call = <A>(operation: string, run: () => Promise<A>): Effect.Effect<A, GitExportError> =>
  Effect.tryPromise({
    try: run,
    catch: (e) => new GitExportError({ operation, detail: e instanceof Error ? e.message : String(e), cause: e })
  })

/**
 * Exports the thread's applied records after the ref's current head (all of them on the
 * first run) and moves the ref once, at the end.
 *
 * @category constructors
 * @since 0.1.0
 */
export const exportThread = (request: ExportRequest): Effect.Effect<ExportResult, GitExportError | StoreError, Sqlite> =>
  Effect.gen(function*() {
    const sql = yield* Sqlite
    const { gitdir } = request
    const ref = refOf(request.threadId)
    const kind = yield* Effect.suspend(() => {
      const k = gitDirectoryOf(gitdir)
      return k instanceof GitExportError ? Effect.fail(k) : Effect.succeed(k)
    })
    if (kind === "init") {
      yield* call("GitExport.init", () => git.init({ fs, dir: gitdir, gitdir, bare: true, defaultBranch: "main" }))
    }
    const head = yield* call("GitExport.resolveRef", () => git.resolveRef({ fs, gitdir, ref })).pipe(
      Effect.catch(() => Effect.succeed<string | null>(null))
    )
    const tree = new Map<string, Entry>()
    let after = 0
    if (head !== null) {
      const commit = yield* call("GitExport.readCommit", () => git.readCommit({ fs, gitdir, oid: head }))
      const last = /^Forkjoin-Record: (.+)$/m.exec(commit.commit.message)?.[1]
      const row = last === undefined
        ? undefined
        : yield* sql.run("GitExport.ordinal", (c) => c.get<{ commit_ordinal: number }>(SQL.ordinalOf, request.environmentId, last))
      if (row === undefined) {
        return yield* new GitExportError({
          operation: "GitExport.resume",
          detail: `${ref} does not end at a record of this history (no Forkjoin-Record trailer found); delete the ref to re-export`
        })
      }
      after = row.commit_ordinal
      const walk = (oid: string, prefix: string): Effect.Effect<void, GitExportError> =>
        Effect.flatMap(call("GitExport.readTree", () => git.readTree({ fs, gitdir, oid })), (t) =>
          Effect.forEach(t.tree, (e) =>
            e.type === "tree"
              ? walk(e.oid, `${prefix}${e.path}/`)
              : Effect.sync(() => void tree.set(`${prefix}${e.path}`, { oid: e.oid, mode: e.mode })), { discard: true }))
      yield* walk(commit.commit.tree, "")
    }
    const records = yield* sql.run("GitExport.records", (c) =>
      c.all<{ record_json: string }>(SQL.records, request.environmentId, request.threadId, after)
        .map((r) => decodeRecord(r.record_json)))
    const blobOids = new Map<string, string>()
    // Consecutive versions share most chunks: each is decompressed once per export.
    const cache = SnapshotStore.makeChunkCache(32 * 1024 * 1024)
    const blobOf = (s: Snapshot | undefined): Effect.Effect<string | undefined, GitExportError | StoreError> =>
      Effect.gen(function*() {
        if (s === undefined) return undefined
        const known = blobOids.get(s.hash)
        if (known !== undefined) return known
        const found = yield* sql.run("GitExport.blob", (c) => SnapshotStore.read(c, "GitExport.blob", s.hash, cache))
        if (found._tag !== "Stored") return undefined
        const oid = yield* call("GitExport.writeBlob", () => git.writeBlob({ fs, gitdir, blob: new Uint8Array(found.bytes) }))
        blobOids.set(s.hash, oid)
        return oid
      })
    const writeTree = (): Effect.Effect<string, GitExportError> => {
      const build = (prefix: string): Effect.Effect<string, GitExportError> =>
        Effect.gen(function*() {
          const files: Array<{ mode: string; path: string; oid: string; type: "blob" | "tree" }> = []
          const dirs = new Set<string>()
          for (const [p, e] of tree) {
            if (!p.startsWith(prefix)) continue
            const rest = p.slice(prefix.length)
            const slash = rest.indexOf("/")
            if (slash < 0) files.push({ mode: e.mode, path: rest, oid: e.oid, type: "blob" })
            else dirs.add(rest.slice(0, slash))
          }
          for (const d of dirs) files.push({ mode: "040000", path: d, oid: yield* build(`${prefix}${d}/`), type: "tree" })
          return yield* call("GitExport.writeTree", () => git.writeTree({ fs, gitdir, tree: files }))
        })
      return build("")
    }
    const commitOf = (message: string, r: PatchHistoryRecord, parent: string | null) =>
      Effect.flatMap(writeTree(), (treeOid) => {
        const who = { ...AUTHOR, timestamp: Math.floor(Date.parse(r.committedAt) / 1000), timezoneOffset: 0 }
        return call("GitExport.writeCommit", () =>
          git.writeCommit({
            fs,
            gitdir,
            commit: { message, tree: treeOid, parent: parent === null ? [] : [parent], author: who, committer: who }
          }))
      })
    let parent = head
    let exported = 0
    let baselines = 0
    let skipped = 0
    for (const r of records) {
      if (r.transactionId.startsWith("verification:")) {
        skipped++
        continue
      }
      // Baseline: prior content of files this export has not seen yet.
      const baseline: Array<string> = []
      for (const c of r.changes) {
        const from = c.kind === "move" ? c.moveFrom! : c.path
        const prior = c.kind === "add" ? c.overwritten : c.before
        if (prior !== undefined && !tree.has(from)) {
          const oid = yield* blobOf(prior)
          if (oid !== undefined) {
            tree.set(from, { oid, mode: modeOf(prior) })
            baseline.push(from)
          }
        }
        if (c.kind === "move" && c.overwritten !== undefined && !tree.has(c.path)) {
          const oid = yield* blobOf(c.overwritten)
          if (oid !== undefined) {
            tree.set(c.path, { oid, mode: modeOf(c.overwritten) })
            baseline.push(c.path)
          }
        }
      }
      if (baseline.length > 0) {
        parent = yield* commitOf(
          `forkjoin: baseline before ${r.recordId}\n\n${baseline.map((p) => `${p}\n`).join("")}\nForkjoin-Baseline: ${r.recordId}\n`,
          r,
          parent
        )
        baselines++
      }
      const unknown: Array<string> = []
      for (const c of r.changes) {
        const previous = tree.get(c.kind === "move" ? c.moveFrom! : c.path)
        if (c.kind === "move") tree.delete(c.moveFrom!)
        if (c.kind === "delete") {
          tree.delete(c.path)
          continue
        }
        const oid = yield* blobOf(c.after)
        if (oid !== undefined) tree.set(c.path, { oid, mode: modeOf(c.after!) })
        else {
          unknown.push(c.path)
          if (previous !== undefined) tree.set(c.path, previous)
        }
      }
      const summary = r.changes.map((c) => `${c.kind} ${c.moveFrom === undefined ? "" : `${c.moveFrom} -> `}${c.path}`)
      const message = `${r.transactionId.slice(0, r.transactionId.indexOf(":"))}: ${summary.slice(0, 3).join(", ")}` +
        `${summary.length > 3 ? `, and ${summary.length - 3} more` : ""}\n\n` +
        `thread ${r.threadId}, turn ${r.turnId}, invocation ${r.invocationId}\ntransaction ${r.transactionId}\n` +
        (unknown.length === 0 ? "" : `content not recorded (tree entry left as it was): ${unknown.join(", ")}\n`) +
        `\nForkjoin-Record: ${r.recordId}\nForkjoin-Authority: ${r.authority}\n` +
        `Forkjoin-Provenance: ${r.provenance}\nForkjoin-Exactness: ${r.exactness}\n`
      parent = yield* commitOf(message, r, parent)
      exported++
    }
    if (parent !== null && parent !== head) {
      yield* call("GitExport.writeRef", () => git.writeRef({ fs, gitdir, ref, value: parent!, force: true }))
    }
    return { ref, head: parent, exported, baselines, skipped }
  })
