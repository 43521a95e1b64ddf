/**
 * A baseline as a content-addressed tree of directory manifests: each directory is one node,
 * the canonical JSON of its entries sorted by name (`{"v":1,"entries":[...]}`), named by the
 * sha256 of those bytes; a file entry names its blob by hash. The root node's hash names the
 * whole baseline, so a runner that reads a few files fetches only the nodes on their paths.
 *
 * Pure: building the tree from a listing of files, encoding, and the strict decode of a node
 * received from elsewhere (untrusted bytes). Decoding refuses anything that could let a node
 * name a path outside its directory or one the workspace policy denies, and any encoding but
 * the canonical one, so one directory content has exactly one id.
 *
 * @since 0.1.0
 */
import { byCodeUnit, sha256 } from "@forkjoin/patch"
import { Sha256Hash } from "@forkjoin/schema"
import { parseJson } from "@forkjoin/schema/JsonText"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/**
 * The manifest format version this build writes and reads.
 *
 * @category models
 * @since 0.1.0
 */
export const MANIFEST_VERSION = 1

/**
 * What an entry is: a regular `file` (its hash names its bytes) or a `dir` (its hash names
 * its node). Links are not part of a baseline: the engine reads neither through them.
 *
 * @category models
 * @since 0.1.0
 */
export const EntryKind = Schema.Literals(["file", "dir"])

/**
 * @category models
 * @since 0.1.0
 */
export type EntryKind = typeof EntryKind.Type

const ByteCount = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * One name in a directory node: its kind, the hash of its blob (file) or node (dir),
 * its size (bytes of content; for a dir, the bytes of its node) and, only when true,
 * for a file, its permission bits (`mode`, as the engine reads them).
 *
 * @category models
 * @since 0.1.0
 */
export const ManifestEntry = Schema.Struct({
  name: Schema.String,
  kind: EntryKind,
  hash: Sha256Hash,
  size: ByteCount,
  mode: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 0o7777 })))
})

/**
 * @category models
 * @since 0.1.0
 */
export type ManifestEntry = typeof ManifestEntry.Type

/**
 * A directory node, version 1: its entries, sorted by name (code unit order), names unique.
 *
 * @category models
 * @since 0.1.0
 */
export const ManifestNode = Schema.Struct({
  v: Schema.Literal(MANIFEST_VERSION),
  entries: Schema.Array(ManifestEntry)
})

/**
 * @category models
 * @since 0.1.0
 */
export type ManifestNode = typeof ManifestNode.Type

/**
 * Why received bytes were refused as a node: `node_malformed` (not UTF-8 JSON of a version 1
 * node), `node_name_refused` (empty, `.`, `..`, a `/`, `\` or NUL in it, or a `.git` /
 * `.forkjoin` entry), `node_unsorted`, `node_duplicate_name`, `node_not_canonical` (another
 * encoding of the same entries) or `object_hash_mismatch` (the bytes are not the ones asked for).
 *
 * @category errors
 * @since 0.1.0
 */
export class ManifestError extends Schema.TaggedError<ManifestError>()("ManifestError", {
  code: Schema.Literals(["node_malformed", "node_name_refused", "node_unsorted", "node_duplicate_name", "node_not_canonical", "object_hash_mismatch"]),
  hash: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `The directory manifest ${this.hash} was refused (${this.code}): ${this.detail}. ` +
      "It did not come from this run's parent unchanged; check what sits between the runner and the parent."
  }
}

// Denied names, case-insensitively, as the overlay hides them: never part of a baseline.
const DENIED_NAMES = new Set([".git", ".forkjoin"])

/**
 * Why `name` cannot be one entry of a directory, or undefined when it can.
 *
 * @category predicates
 * @since 0.1.0
 */
export const nameProblem = (name: string): string | undefined => {
  if (name.length === 0) return "an entry has an empty name"
  if (name === "." || name === "..") return `an entry is named ${JSON.stringify(name)}`
  if (/[/\\\0]/.test(name)) return `the entry name ${JSON.stringify(name)} holds a path separator or NUL`
  if (DENIED_NAMES.has(name.toLowerCase())) return `the entry ${JSON.stringify(name)} is a folder the workspace policy denies`
  return undefined
}

/**
 * The canonical bytes of a node: keys in schema order, `mode` only when known, no spaces.
 *
 * @category encoding
 * @since 0.1.0
 */
export const encodeNode = (node: ManifestNode): Uint8Array =>
  new TextEncoder().encode(JSON.stringify({
    v: node.v,
    entries: node.entries.map((e) => ({
      name: e.name,
      kind: e.kind,
      hash: e.hash,
      size: e.size,
      ...(e.mode === undefined ? {} : { mode: e.mode })
    }))
  }))

const decodeShape = Schema.decodeUnknownResult(ManifestNode, { onExcessProperty: "error" })

/**
 * Decodes untrusted `bytes` received as the node `hash`: the bytes must hash to `hash`, be
 * the canonical encoding of a version 1 node, and every name must be safe, sorted and unique.
 *
 * @category decoding
 * @since 0.1.0
 */
export const decodeNode = (hash: string, bytes: Uint8Array): Result.Result<ManifestNode, ManifestError> => {
  const fail = (code: ManifestError["code"], detail: string) => Result.fail(new ManifestError({ code, hash, detail }))
  const actual = sha256(bytes)
  if (actual !== hash) return fail("object_hash_mismatch", `its bytes hash to ${actual}`)
  let text: string
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes)
  } catch {
    return fail("node_malformed", "it is not UTF-8")
  }
  const parsed = parseJson(text)
  if (!parsed.ok) return fail("node_malformed", "it is not JSON")
  const shape = decodeShape(parsed.value)
  if (Result.isFailure(shape)) return fail("node_malformed", `it is not a version ${MANIFEST_VERSION} directory manifest`)
  const node = shape.success
  for (const [i, e] of node.entries.entries()) {
    const problem = nameProblem(e.name)
    if (problem !== undefined) return fail("node_name_refused", problem)
    const before = i === 0 ? undefined : node.entries[i - 1]!.name
    if (before === e.name) return fail("node_duplicate_name", `the name ${JSON.stringify(e.name)} appears twice`)
    if (before !== undefined && byCodeUnit(before, e.name) > 0) {
      return fail("node_unsorted", `${JSON.stringify(e.name)} comes after ${JSON.stringify(before)}`)
    }
  }
  const canonical = encodeNode(node)
  if (sha256(canonical) !== hash) return fail("node_not_canonical", "it is not the canonical encoding of its entries")
  return Result.succeed(node)
}

/**
 * One file of a baseline listing: its workspace-relative path (normalized), content hash,
 * size and permission bits (`mode`, when the engine reported them).
 *
 * @category models
 * @since 0.1.0
 */
export interface BaselineFile {
  readonly path: string
  readonly hash: Sha256Hash
  readonly size: number
  readonly mode: number | undefined
}

/**
 * A built tree: the root node's hash and every node's bytes by hash.
 *
 * @category models
 * @since 0.1.0
 */
export interface Tree {
  readonly root: Sha256Hash
  readonly nodes: ReadonlyMap<Sha256Hash, Uint8Array>
}

interface Dir {
  readonly files: Map<string, BaselineFile>
  readonly dirs: Map<string, Dir>
}

const emptyDir = (): Dir => ({ files: new Map(), dirs: new Map() })

/**
 * Builds the tree of `files` (normalized, unique paths) plus the empty directories `dirs`.
 * Equal directory contents give equal nodes, stored once.
 *
 * @category constructors
 * @since 0.1.0
 */
export const buildTree = (files: ReadonlyArray<BaselineFile>, dirs: ReadonlyArray<string> = []): Tree => {
  const top = emptyDir()
  const dirAt = (segments: ReadonlyArray<string>): Dir => {
    let d = top
    for (const s of segments) {
      let next = d.dirs.get(s)
      if (next === undefined) d.dirs.set(s, next = emptyDir())
      d = next
    }
    return d
  }
  for (const f of files) {
    const segments = f.path.split("/")
    dirAt(segments.slice(0, -1)).files.set(segments[segments.length - 1]!, f)
  }
  for (const d of dirs) if (d !== "") dirAt(d.split("/"))
  const nodes = new Map<Sha256Hash, Uint8Array>()
  const emit = (d: Dir): { readonly hash: Sha256Hash; readonly size: number } => {
    const entries: Array<ManifestEntry> = []
    for (const [name, sub] of d.dirs) {
      const child = emit(sub)
      entries.push({ name, kind: "dir", hash: child.hash, size: child.size })
    }
    for (const [name, f] of d.files) {
      entries.push({ name, kind: "file", hash: f.hash, size: f.size, ...(f.mode === undefined ? {} : { mode: f.mode }) })
    }
    entries.sort((a, b) => byCodeUnit(a.name, b.name))
    const bytes = encodeNode({ v: MANIFEST_VERSION, entries })
    const hash = sha256(bytes)
    nodes.set(hash, bytes)
    return { hash, size: bytes.length }
  }
  return { root: emit(top).hash, nodes }
}
