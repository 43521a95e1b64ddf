/**
 * What a `changeset_export` child hands its parent (SPEC §6.3, schemaVersion 1): per touched
 * path, the **first preimage** (the shared file as the child first saw it, or absent) and the
 * **last postimage** (its final staged content, or absent for a deletion), moves kept as moves.
 * Content is not inlined: every stored postimage lives in a content-addressed blob store under
 * its `sha256:` hash (`blobs.hashes` lists them), so large and binary files travel exactly.
 *
 * The schema enforces what a changeset must say to be applied safely: sides consistent with
 * each kind, image paths equal to their entry's (a move's preimage names its source), one
 * entry per path, every path inside the non-empty `writeScope` (`/` boundary), `exportable`
 * equal to the conjunction of the entries' and explained by a `reason` when false, and every
 * exportable postimage present in `blobs`. Changesets cross a trust boundary: decode them with
 * `decodeUntrustedChangeset` (excess properties are errors). Building them is the runtime's job.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { RelativePath, Sha256Hash, TaskId, ThreadId } from "./Ids.ts"
import { ChangeKind } from "./PatchHistoryRecord.ts"
import { Encoding, FileMode, LineEnding } from "./Snapshot.ts"

const ByteCount = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * A path's content when the child first touched it: the snapshot facts of SPEC §4.2 plus the
 * `path` it was read at (a move's source). `mode` is informational; baselines compare `hash`.
 *
 * @category models
 * @since 0.1.0
 */
export const ChangesetPreimage = Schema.Struct({
  path: RelativePath,
  hash: Sha256Hash,
  bytes: ByteCount,
  encoding: Encoding,
  lineEnding: LineEnding,
  finalNewline: Schema.Boolean,
  mode: Schema.optionalKey(FileMode)
})

/**
 * @category models
 * @since 0.1.0
 */
export type ChangesetPreimage = typeof ChangesetPreimage.Type

/**
 * A path's final staged content: `hash` (its blob address), size and text facts. The file
 * mode is not the child's to choose; the engine keeps the existing (or the source's) mode.
 *
 * @category models
 * @since 0.1.0
 */
export const ChangesetPostimage = Schema.Struct({
  path: RelativePath,
  hash: Sha256Hash,
  bytes: ByteCount,
  encoding: Encoding,
  lineEnding: LineEnding,
  finalNewline: Schema.Boolean
})

/**
 * @category models
 * @since 0.1.0
 */
export type ChangesetPostimage = typeof ChangesetPostimage.Type

/**
 * Why an entry cannot be exported: `postimage_too_large` (above the per-file limit, so its
 * blob was not stored). The message says what to do.
 *
 * @category models
 * @since 0.1.0
 */
export const NotExportableReason = Schema.Struct({
  code: Schema.Literals(["postimage_too_large"]),
  message: Schema.String
})

/**
 * @category models
 * @since 0.1.0
 */
export type NotExportableReason = typeof NotExportableReason.Type

const entryIssues = (e: {
  readonly path: RelativePath
  readonly kind: ChangeKind
  readonly moveFrom?: RelativePath
  readonly preimage?: ChangesetPreimage
  readonly postimage?: ChangesetPostimage
  readonly overwritten?: ChangesetPreimage
  readonly exportable: boolean
  readonly reason?: NotExportableReason
}): Array<Schema.FilterIssue> => {
  const issues: Array<Schema.FilterIssue> = []
  const needsPre = e.kind !== "add"
  const needsPost = e.kind !== "delete"
  if (needsPre && e.preimage === undefined) issues.push({ path: ["preimage"], issue: `a ${e.kind} entry needs a preimage` })
  if (!needsPre && e.preimage !== undefined) {
    issues.push({ path: ["preimage"], issue: "an add entry has no preimage (replacing an existing file is a replace)" })
  }
  if (needsPost && e.postimage === undefined) issues.push({ path: ["postimage"], issue: `a ${e.kind} entry needs a postimage` })
  if (!needsPost && e.postimage !== undefined) issues.push({ path: ["postimage"], issue: "a delete entry has no postimage" })
  if (e.kind === "move") {
    if (e.moveFrom === undefined) issues.push({ path: ["moveFrom"], issue: "a move entry needs moveFrom" })
    else if (e.moveFrom === e.path) issues.push({ path: ["moveFrom"], issue: "a move's moveFrom must differ from its path" })
  } else {
    if (e.moveFrom !== undefined) issues.push({ path: ["moveFrom"], issue: `only a move entry may have moveFrom, not ${e.kind}` })
    if (e.overwritten !== undefined) {
      issues.push({ path: ["overwritten"], issue: `only a move entry may have overwritten, not ${e.kind}` })
    }
  }
  const source = e.moveFrom ?? e.path
  if (e.preimage !== undefined && e.preimage.path !== source) {
    issues.push({
      path: ["preimage", "path"],
      issue: `the preimage path must be the entry's ${e.kind === "move" ? "moveFrom" : "path"} ${JSON.stringify(source)}`
    })
  }
  if (e.postimage !== undefined && e.postimage.path !== e.path) {
    issues.push({ path: ["postimage", "path"], issue: `the postimage path must be the entry's path ${JSON.stringify(e.path)}` })
  }
  if (e.overwritten !== undefined && e.overwritten.path !== e.path) {
    issues.push({ path: ["overwritten", "path"], issue: `the overwritten path must be the entry's path ${JSON.stringify(e.path)}` })
  }
  if (e.exportable && e.reason !== undefined) issues.push({ path: ["reason"], issue: "an exportable entry has no reason" })
  if (!e.exportable && e.reason === undefined) {
    issues.push({ path: ["reason"], issue: "an entry that is not exportable needs a reason" })
  }
  return issues
}

/**
 * One touched path's net change: `kind` (`add`, `update` for in-place text edits, `replace`
 * for whole-content writes, `delete`, `move`), `path` (a move's destination), `moveFrom`,
 * the first `preimage`, the last `postimage`, for a move onto an existing file the
 * destination's `overwritten` preimage, and whether the entry is `exportable` (else `reason`).
 *
 * @category models
 * @since 0.1.0
 */
export const ChangesetEntry = Schema.Struct({
  path: RelativePath,
  kind: ChangeKind,
  moveFrom: Schema.optionalKey(RelativePath),
  preimage: Schema.optionalKey(ChangesetPreimage),
  postimage: Schema.optionalKey(ChangesetPostimage),
  overwritten: Schema.optionalKey(ChangesetPreimage),
  exportable: Schema.Boolean,
  reason: Schema.optionalKey(NotExportableReason)
}).check(Schema.makeFilter(entryIssues, { expected: "a consistent changeset entry" }))

/**
 * @category models
 * @since 0.1.0
 */
export type ChangesetEntry = typeof ChangesetEntry.Type

/**
 * Where postimage content lives: blobs addressed by `sha256` (the store's layout is
 * `blobs/sha256/<hex>` under the run's artifact directory), and the distinct hashes this
 * changeset needs, sorted.
 *
 * @category models
 * @since 0.1.0
 */
export const ChangesetBlobs = Schema.Struct({
  addressing: Schema.Literal("sha256"),
  hashes: Schema.Array(Sha256Hash)
})

/**
 * @category models
 * @since 0.1.0
 */
export type ChangesetBlobs = typeof ChangesetBlobs.Type

/**
 * The limits the export applied: `maxFileBytes`, the largest postimage stored (default 16 MiB).
 *
 * @category models
 * @since 0.1.0
 */
export const ChangesetLimits = Schema.Struct({
  maxFileBytes: ByteCount
})

/**
 * @category models
 * @since 0.1.0
 */
export type ChangesetLimits = typeof ChangesetLimits.Type

/**
 * The write-scope membership rule over already-normalized paths: `p` is a scope path or lies
 * below one across a `/` boundary (`src/api` covers `src/api/x.ts`, not `src/api2/x.ts`).
 *
 * @category predicates
 * @since 0.1.0
 */
export const scopeCovers = (scope: ReadonlyArray<string>, p: string): boolean =>
  scope.some((s) => p === s || (p.length > s.length && p.startsWith(s) && p[s.length] === "/"))

const changesetIssues = (c: {
  readonly writeScope: ReadonlyArray<RelativePath>
  readonly exportable: boolean
  readonly blobs: ChangesetBlobs
  readonly entries: ReadonlyArray<ChangesetEntry>
}): Array<Schema.FilterIssue> => {
  const issues: Array<Schema.FilterIssue> = []
  if (c.writeScope.length === 0) issues.push({ path: ["writeScope"], issue: "a changeset needs a non-empty writeScope" })
  if (new Set(c.writeScope).size !== c.writeScope.length) {
    issues.push({ path: ["writeScope"], issue: "writeScope lists a path twice" })
  }
  const blobs = new Set<string>(c.blobs.hashes)
  if (blobs.size !== c.blobs.hashes.length) issues.push({ path: ["blobs", "hashes"], issue: "blobs.hashes lists a hash twice" })
  const touched = new Map<string, string>()
  const claim = (p: string, where: ReadonlyArray<PropertyKey>, what: string) => {
    const other = touched.get(p)
    if (other !== undefined) issues.push({ path: where, issue: `${what} ${JSON.stringify(p)} is also ${other}` })
    else touched.set(p, what)
    if (c.writeScope.length > 0 && !scopeCovers(c.writeScope, p)) {
      issues.push({ path: where, issue: `${what} ${JSON.stringify(p)} is outside the writeScope` })
    }
  }
  c.entries.forEach((e, i) => {
    claim(e.path, ["entries", i, "path"], "the path of an entry")
    if (e.moveFrom !== undefined) claim(e.moveFrom, ["entries", i, "moveFrom"], "the moveFrom of an entry")
    const pureMove = e.kind === "move" && e.preimage !== undefined && e.postimage?.hash === e.preimage.hash
    if (e.exportable && e.postimage !== undefined && !pureMove && !blobs.has(e.postimage.hash)) {
      issues.push({ path: ["entries", i, "postimage", "hash"], issue: "an exportable postimage must be listed in blobs.hashes" })
    }
  })
  const all = c.entries.every((e) => e.exportable)
  if (c.exportable !== all) {
    issues.push({ path: ["exportable"], issue: `exportable must be ${all} (every entry exportable: ${all})` })
  }
  return issues
}

/**
 * A child's exported changeset, schemaVersion 1: who made it (`childId`, `taskId`,
 * `threadId`), the normalized `writeScope` it was confined to, whether every entry is
 * `exportable`, the `limits` applied, where its content lives (`blobs`) and its `entries`
 * (sorted by path, no-op paths dropped).
 *
 * @category models
 * @since 0.1.0
 */
export const Changeset = Schema.Struct({
  schemaVersion: Schema.Literal(1),
  childId: TaskId,
  taskId: TaskId,
  threadId: ThreadId,
  writeScope: Schema.Array(RelativePath),
  exportable: Schema.Boolean,
  limits: ChangesetLimits,
  blobs: ChangesetBlobs,
  entries: Schema.Array(ChangesetEntry)
}).check(Schema.makeFilter(changesetIssues, { expected: "a consistent changeset" }))

/**
 * @category models
 * @since 0.1.0
 */
export type Changeset = typeof Changeset.Type

/**
 * The JSON form of a `Changeset` (same shape, unbranded strings).
 *
 * @category models
 * @since 0.1.0
 */
export type ChangesetEncoded = typeof Changeset.Encoded

/**
 * A `Changeset` encoded as a JSON string (the child's `changeset.json` artifact).
 *
 * @category models
 * @since 0.1.0
 */
export const ChangesetFromJson = Schema.fromJsonString(Changeset)

/**
 * Parse options for changesets from outside the process (a child, a file): unknown keys are
 * errors rather than silently dropped, and every problem is reported.
 *
 * @category models
 * @since 0.1.0
 */
export const untrustedChangesetOptions = { onExcessProperty: "error", errors: "all" } as const

/**
 * Decodes an untrusted value as a `Changeset` with `untrustedChangesetOptions`, as a `Result`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const decodeUntrustedChangeset = Schema.decodeUnknownResult(Changeset, untrustedChangesetOptions)

/**
 * Decodes an untrusted JSON string as a `Changeset` with `untrustedChangesetOptions`, as a `Result`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const decodeUntrustedChangesetJson = Schema.decodeUnknownResult(ChangesetFromJson, untrustedChangesetOptions)
