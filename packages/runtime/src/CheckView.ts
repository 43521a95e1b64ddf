/**
 * The throwaway view a child's own check (`childVerify`) runs in: a fresh folder outside the
 * workspace holding the workspace's files as the child saw them, with its changeset applied.
 * Files are copied by reflink where the filesystem allows (`COPYFILE_FICLONE` falls back to a
 * real copy by itself), never hardlinked, so nothing done in the view reaches the workspace.
 * `.git` and `.forkjoin` folders are left out; a link is kept only when it is relative and
 * stays inside the copy, and other special files are left out.
 *
 * The child's baseline is checked, not assumed: every path its changeset replaces, deletes or
 * moves must still hold the bytes it started from (its preimage hash), and every path it adds
 * must still be absent; otherwise the view is not made (`baseline_changed`).
 *
 * Owns making and removing the view. Does not own running the check (`ChildVerify`).
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import type { Changeset, Sha256Hash } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { BlobStore } from "./BlobStore.ts"

/** Folders never copied into a view: history and forkjoin's own state. */
const LEFT_OUT: ReadonlySet<string> = new Set([".git", ".forkjoin"])

/** Files copied between two turns of the event loop. */
const COPY_BATCH = 64

/**
 * Why a view was not made: `baseline_changed` (a path no longer holds what the child started
 * from: `paths`) or `io` (the copy itself failed).
 *
 * @category errors
 * @since 0.1.0
 */
export class CheckViewError extends Schema.TaggedError<CheckViewError>()("CheckViewError", {
  reason: Schema.Literals(["baseline_changed", "io"]),
  paths: Schema.Array(Schema.String),
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message(): string {
    return this.detail
  }
}

/** What the walk found: folders to make, files to copy, links to remake (all relative). */
interface Tree {
  readonly dirs: Array<string>
  readonly files: Array<string>
  readonly links: Array<readonly [string, string]>
}

/** Whether `target`, a link at `at` (relative), stays inside the copy: relative, never leading above its root. */
const linkStaysInside = (at: string, target: string): boolean => {
  if (path.isAbsolute(target)) return false
  const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(at), target))
  // `..` anywhere would be resolved through a link by the kernel, not lexically: refuse it.
  return resolved !== ".." && !resolved.startsWith("../") && !target.split("/").includes("..")
}

const walk = async (root: string): Promise<Tree> => {
  const tree: Tree = { dirs: [], files: [], links: [] }
  const visit = async (rel: string): Promise<void> => {
    const entries = await fs.promises.readdir(path.join(root, rel), { withFileTypes: true })
    for (const e of entries) {
      const child = rel === "" ? e.name : `${rel}/${e.name}`
      if (e.isDirectory()) {
        if (LEFT_OUT.has(e.name)) continue
        tree.dirs.push(child)
        await visit(child)
      } else if (e.isFile()) tree.files.push(child)
      else if (e.isSymbolicLink()) {
        const target = await fs.promises.readlink(path.join(root, child))
        if (linkStaysInside(child, target)) tree.links.push([child, target])
      }
    }
  }
  await visit("")
  return tree
}

const copyTree = async (root: string, dest: string, tree: Tree): Promise<void> => {
  for (const d of tree.dirs) fs.mkdirSync(path.join(dest, d), { recursive: true })
  // Synchronous copies in small batches: much faster than one promise per file through the
  // thread pool, and the event loop gets a turn between batches (other children keep running).
  for (let i = 0; i < tree.files.length; i += COPY_BATCH) {
    for (const f of tree.files.slice(i, i + COPY_BATCH)) fs.copyFileSync(path.join(root, f), path.join(dest, f), fs.constants.COPYFILE_FICLONE)
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  for (const [at, target] of tree.links) fs.symlinkSync(target, path.join(dest, at))
}

/** The hash of the regular file at `file`, `absent` when nothing is there, `other` for anything else. */
const stateOf = (file: string): Sha256Hash | "absent" | "other" => {
  let stat: fs.Stats
  try {
    stat = fs.lstatSync(file)
  } catch {
    return "absent"
  }
  return stat.isFile() ? sha256(fs.readFileSync(file)) : "other"
}

/** The paths of `changeset` whose copy is not what the child started from. */
const drifted = (dest: string, changeset: Changeset): Array<string> => {
  const out: Array<string> = []
  for (const e of changeset.entries) {
    const source = e.moveFrom ?? e.path
    if (e.preimage !== undefined && stateOf(path.join(dest, source)) !== e.preimage.hash) out.push(source)
    if (e.kind === "add" && stateOf(path.join(dest, e.path)) !== "absent") out.push(e.path)
    if (e.kind === "move") {
      const at = stateOf(path.join(dest, e.path))
      if (e.overwritten === undefined ? at !== "absent" : at !== e.overwritten.hash) out.push(e.path)
    }
  }
  return out
}

/** The absolute path of `rel` in `dest`, refused when a link on the way leads out of the copy. */
const inside = (dest: string, rel: string): string => {
  const file = path.join(dest, rel)
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const real = fs.realpathSync(path.dirname(file))
  if (real !== dest && !real.startsWith(dest + path.sep)) throw new Error(`${rel} leads out of the check's copy`)
  return path.join(real, path.basename(file))
}

/**
 * Makes the view of `root` plus `changeset` (its content from the `BlobStore`) in a fresh
 * folder under the system's temp folder, which must be outside `root`, and returns that
 * folder; on failure nothing of it is left.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (root: string, changeset: Changeset, blobs: BlobStore["Service"]): Effect.Effect<string, CheckViewError> =>
  Effect.gen(function*() {
    const io = (what: string) => (cause: unknown) =>
      new CheckViewError({ reason: "io", paths: [], detail: `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })
    const realRoot = yield* Effect.try({ try: () => fs.realpathSync(root), catch: io("Reading the workspace") })
    const dest = yield* Effect.try({ try: () => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-check-"))), catch: io("Making the check's copy") })
    const made = Effect.gen(function*() {
      if (dest === realRoot || dest.startsWith(realRoot + path.sep)) {
        return yield* io("Making the check's copy")(new Error(`the temp folder ${dest} is inside the workspace; set TMPDIR to a folder outside it`))
      }
      const tree = yield* Effect.tryPromise({ try: () => walk(realRoot), catch: io("Reading the workspace") })
      yield* Effect.tryPromise({ try: () => copyTree(realRoot, dest, tree), catch: io("Copying the workspace") })
      const changed = yield* Effect.try({ try: () => drifted(dest, changeset), catch: io("Reading the copy") })
      if (changed.length > 0) {
        return yield* new CheckViewError({
          reason: "baseline_changed",
          paths: changed,
          detail: `the workspace changed under the child since it started (${changed.join(", ")}), so its check cannot see what it saw; ` +
            "run the child again on the current files"
        })
      }
      for (const e of changeset.entries) {
        const apply = (what: string, f: () => void) => Effect.try({ try: f, catch: io(`Applying the child's change to ${what}`) })
        // A pure move carries no blob: its bytes are the source's, checked against the preimage above.
        let moved: Uint8Array | undefined
        if (e.moveFrom !== undefined) {
          const from = e.moveFrom
          yield* apply(from, () => {
            const file = inside(dest, from)
            moved = fs.readFileSync(file)
            fs.rmSync(file)
          })
        }
        const post = e.postimage
        if (post === undefined) {
          yield* apply(e.path, () => fs.rmSync(inside(dest, e.path)))
          continue
        }
        const bytes = moved !== undefined && post.hash === e.preimage?.hash
          ? moved
          : yield* blobs.get(post.hash).pipe(Effect.mapError(io(`Reading the content of ${e.path}`)))
        const mode = e.preimage?.mode
        yield* apply(e.path, () => {
          const file = inside(dest, e.path)
          fs.rmSync(file, { force: true })
          fs.writeFileSync(file, bytes, mode === undefined ? {} : { mode })
        })
      }
      return dest
    })
    return yield* made.pipe(Effect.tapError(() => remove(dest)))
  })

/**
 * Removes a view made by `make` (best effort: a folder that cannot be removed is left to the
 * system's temp cleaning, never the child's failure).
 *
 * @category constructors
 * @since 0.1.0
 */
export const remove = (dir: string): Effect.Effect<void> =>
  Effect.sync(() => {
    try {
      fs.rmSync(dir, { recursive: true, force: true })
    } catch {
      // Left to the system's temp cleaning.
    }
  })
