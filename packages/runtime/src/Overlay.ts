/**
 * The workspace view of a `changeset_export` child (SPEC §6.2–6.3). Reads return the child's
 * staged content when it wrote the path, else the shared content captured through
 * `Engine.read` at the child's first touch of that path (repeatable reads). Mutations
 * (`apply_patch`, whole-file writes, deletes, moves) are checked against the write scope, then
 * planned by the pure patch core against this view — so a patch sees the child's own earlier
 * edits — and staged in memory. Nothing is ever written to the shared workspace, not even
 * temporarily; at a clean finish `export` turns the staged state into a `Changeset` whose
 * postimages go to the `BlobStore`.
 *
 * It owns the view, the staging and the export. It does not own sessions, drivers or action
 * observations (the session runtime), nor applying changesets (the join, through the engine).
 *
 * @since 0.1.0
 */
import { Engine, sha256 } from "@forkjoin/engine/Engine"
import {
  describeText,
  type FileState,
  normalizeRelativePath,
  parsePatch,
  patchTargets,
  type Plan,
  type PlannedFile,
  planPatch,
  type Profile,
  type SummaryLine
} from "@forkjoin/patch"
import {
  Changeset,
  type ChangesetEncoded,
  type ChangesetEntry,
  type TaskId,
  type ThreadId,
  untrustedChangesetOptions
} from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import * as fs from "node:fs"
import * as path from "node:path"
import { BlobStore, type BlobStoreError } from "./BlobStore.ts"
import { compileGlob, DEFAULT_DENIED_GLOBS } from "./internal/glob.ts"
import * as WriteScope from "./WriteScope.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * The default per-file export limit: 16 MiB. Larger postimages stay staged but are not
 * exportable.
 *
 * @category models
 * @since 0.1.0
 */
export const DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024

/**
 * How an overlay is set up.
 *
 * @category models
 * @since 0.1.0
 */
export interface OverlayOptions {
  /** The child's write scope; every mutation is checked against it before staging. */
  readonly writeScope: WriteScope.WriteScope
  /** Patch profile (default `native`). */
  readonly profile?: Profile
  /** Let `Add File` / moves replace existing files (default false, as the engine's default grant). */
  readonly allowOverwrite?: boolean
  /** Largest postimage the export stores (default `DEFAULT_MAX_FILE_BYTES`). */
  readonly maxFileBytes?: number
  /** Globs hidden from listings; keep equal to the engine's policy (default `.git/**`, `.forkjoin/**`). */
  readonly deniedGlobs?: ReadonlyArray<string>
}

/**
 * One name in a directory listing.
 *
 * @category models
 * @since 0.1.0
 */
export interface DirEntry {
  readonly name: string
  readonly kind: "file" | "directory" | "symlink" | "other"
}

/**
 * One path a mutation staged: the plan kind, the path (a move's destination), the move's
 * source, and the new size (absent for a deletion).
 *
 * @category models
 * @since 0.1.0
 */
export interface StagedChange {
  readonly kind: PlannedFile["kind"]
  readonly path: string
  readonly moveFrom?: string
  readonly bytes?: number
}

/**
 * A non-fatal note about a staged mutation, e.g. a file now too large to export.
 *
 * @category models
 * @since 0.1.0
 */
export interface StageWarning {
  readonly code: "postimage_too_large"
  readonly path: string
  readonly message: string
}

/**
 * What one mutation staged: its changes, the Codex-style A/M/D summary and warnings.
 *
 * @category models
 * @since 0.1.0
 */
export interface StageResult {
  readonly changes: ReadonlyArray<StagedChange>
  readonly summary: ReadonlyArray<SummaryLine>
  readonly warnings: ReadonlyArray<StageWarning>
}

/**
 * Who the exported changeset belongs to.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExportIdentity {
  readonly childId: TaskId
  readonly taskId: TaskId
  readonly threadId: ThreadId
}

/**
 * A child's workspace view. Operations are serialized; every one fails with `OverlayClosed`
 * after `export` or `discard`.
 *
 * @category models
 * @since 0.1.0
 */
export interface Overlay {
  readonly writeScope: WriteScope.WriteScope
  readonly maxFileBytes: number
  /** The file's bytes in this view (a copy). */
  readonly readFile: (path: string) => Effect.Effect<Uint8Array, EngineError | OverlayClosed>
  /** The directory's entries in this view, sorted by name (`""` or `"."` is the root). */
  readonly listDir: (path: string) => Effect.Effect<ReadonlyArray<DirEntry>, EngineError | OverlayClosed>
  /** Plans an apply_patch text against this view and stages the result. */
  readonly applyPatch: (patch: string) => Effect.Effect<StageResult, EngineError | WriteScope.WriteScopeViolation | OverlayClosed>
  /** Stages a whole-file write (any bytes, binary included). */
  readonly writeFile: (
    path: string,
    bytes: Uint8Array
  ) => Effect.Effect<StageResult, EngineError | WriteScope.WriteScopeViolation | OverlayClosed>
  /** Stages the deletion of a file. */
  readonly deleteFile: (path: string) => Effect.Effect<StageResult, EngineError | WriteScope.WriteScopeViolation | OverlayClosed>
  /** Stages moving a file (both paths must be in scope). */
  readonly moveFile: (
    from: string,
    to: string
  ) => Effect.Effect<StageResult, EngineError | WriteScope.WriteScopeViolation | OverlayClosed>
  /** Builds the changeset, storing postimages in the `BlobStore`; closes the overlay on success. */
  readonly export: (identity: ExportIdentity) => Effect.Effect<Changeset, BlobStoreError | OverlayClosed, BlobStore>
  /** Drops everything staged (error, cancel, timeout exits); closes the overlay. */
  readonly discard: Effect.Effect<void>
}

// -------------------------------------------------------------------------------------
// errors
// -------------------------------------------------------------------------------------

/**
 * The overlay was already exported or discarded; a finished child cannot stage more.
 *
 * @category errors
 * @since 0.1.0
 */
export class OverlayClosed extends Schema.TaggedError<OverlayClosed>()("OverlayClosed", {
  operation: Schema.String,
  state: Schema.Literals(["exported", "discarded"])
}) {
  /** The stable observation code. */
  get code(): "overlay_closed" {
    return "overlay_closed"
  }
  override get message(): string {
    return `${this.operation} was refused: this child's workspace view was already ${this.state}.`
  }
}

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

type Staged = { readonly _tag: "File"; readonly bytes: Uint8Array } | { readonly _tag: "Missing" }

const MISSING: Staged = { _tag: "Missing" }
const DIRECTORY: FileState = { _tag: "Directory" }

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && Buffer.compare(a, b) === 0

const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** Stage 3 is where the engine reports path and read problems; the overlay uses the same. */
const viewError = (code: EngineError["code"], p: string, message: string) =>
  new EngineError({ code, stage: 3, paths: [p], message })

const planError = (code: EngineError["code"], paths: ReadonlyArray<string>, message: string) =>
  new EngineError({ code, stage: 5, paths, message })

const isInside = (root: string, candidate: string): boolean =>
  candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep)

/**
 * Creates an empty overlay over the engine's workspace. Nothing is read until first touch.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: OverlayOptions): Effect.Effect<Overlay, never, Engine> =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const root = engine.root
    const scope = options.writeScope
    const profile = options.profile ?? "native"
    const allowOverwrite = options.allowOverwrite ?? false
    const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES
    if (!Number.isSafeInteger(maxFileBytes) || maxFileBytes < 0) {
      return yield* Effect.die(new RangeError(`maxFileBytes must be a non-negative integer, got ${maxFileBytes}`))
    }
    // Case-insensitive on purpose: hiding `.GIT` too costs nothing and never exposes more.
    const denied = (options.deniedGlobs ?? DEFAULT_DENIED_GLOBS).map((g) => compileGlob(g, true))
    const lock = yield* Semaphore.make(1)

    /** Shared state at first touch (File, Missing, Directory or Other). */
    const base = new Map<string, FileState>()
    /** Permission bits of base files (informational, for preimages). */
    const modes = new Map<string, number>()
    /** The child's writes: final content or deletion, per path. */
    const staged = new Map<string, Staged>()
    /** Directory → number of staged files below it (so directory checks cost O(depth), not O(staged)). */
    const stagedFilesBelow = new Map<string, number>()
    /** Paths whose content was written whole (add, replace, move destination) at least once. */
    const wholeWrite = new Set<string>()
    /** Move destination → the original source of its content (chains collapse). */
    const origin = new Map<string, string>()
    /** Shared directory listings at first list (repeatable like reads). */
    const listings = new Map<string, ReadonlyArray<DirEntry>>()
    let closed: "exported" | "discarded" | undefined

    const guardOpen = (operation: string) =>
      closed === undefined ? Effect.void : Effect.fail(new OverlayClosed({ operation, state: closed }))

    const ancestorsOf = (p: string): ReadonlyArray<string> => {
      const segments = p.split("/")
      return segments.slice(0, -1).map((_, i) => segments.slice(0, i + 1).join("/"))
    }

    const hasStagedFileBelow = (p: string): boolean => (stagedFilesBelow.get(p) ?? 0) > 0

    const setStaged = (p: string, next: Staged): void => {
      const delta = (next._tag === "File" ? 1 : 0) - (staged.get(p)?._tag === "File" ? 1 : 0)
      staged.set(p, next)
      if (delta === 0) return
      for (const a of ancestorsOf(p)) {
        const n = (stagedFilesBelow.get(a) ?? 0) + delta
        if (n === 0) stagedFilesBelow.delete(a)
        else stagedFilesBelow.set(a, n)
      }
    }

    const throughFile = (p: string, a: string) =>
      viewError("path_invalid", p, `Path '${p}' goes through '${a}', which is a file in this workspace view; fix the path.`)

    /**
     * The view of `p` from what the overlay already knows, or `undefined` when the shared
     * workspace must be read. Staged files below `p` make it a directory; a file (or a deleted
     * file) on the way down decides for everything below it.
     */
    const known = (p: string): FileState | EngineError | undefined => {
      if (hasStagedFileBelow(p)) return DIRECTORY
      return staged.get(p) ?? derivedBase(p) ?? base.get(p)
    }

    /**
     * The baseline of `p` implied by what the overlay already saw on the way down: absent below
     * an absent path or a deleted file, an error through a file; `undefined` means read it.
     */
    const derivedBase = (p: string): FileState | EngineError | undefined => {
      for (const a of ancestorsOf(p)) {
        const sa = staged.get(a)
        if (sa?._tag === "File") return throughFile(p, a)
        if (sa?._tag === "Missing") return MISSING
        const ba = base.get(a)
        if (ba?._tag === "File") return throughFile(p, a)
        if (ba?._tag === "Missing") return MISSING
      }
      return undefined
    }

    /**
     * Captures the baseline of every path not yet touched (one `Engine.read` for those the
     * overlay cannot derive), then answers each from the view.
     */
    const viewOf = (paths: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const unknown: Array<string> = []
        for (const p of paths) {
          if (base.has(p)) continue
          const derived = derivedBase(p)
          if (derived === undefined) unknown.push(p)
          // What the view said at first touch is this path's baseline, even when derived.
          else if (!(derived instanceof EngineError)) base.set(p, derived)
        }
        if (unknown.length > 0) {
          const read = yield* engine.read(unknown)
          for (const p of unknown) {
            const state = read.get(p) ?? MISSING
            base.set(p, state)
            if (state._tag === "File") {
              try {
                modes.set(p, fs.statSync(path.join(root, p)).mode & 0o7777)
              } catch {
                // The mode is informational; the bytes read by the engine are the baseline.
              }
            }
          }
        }
        const out = new Map<string, FileState>()
        for (const p of paths) {
          const k = known(p) ?? MISSING
          if (k instanceof EngineError) return yield* k
          out.set(p, k)
        }
        return out as ReadonlyMap<string, FileState>
      })

    const normalize = (raw: string) => {
      const r = normalizeRelativePath(raw)
      return Result.isSuccess(r) ? Effect.succeed(r.success) : Effect.fail(r.failure)
    }

    /**
     * Where a write to `p` would land, following symbolic links on the way (as the engine
     * does), as a workspace-relative path; `undefined` when it would leave the workspace.
     */
    const landingOf = (p: string): string | undefined => {
      const segments = p.split("/")
      let current = root
      let depth = 0
      for (; depth < segments.length - 1; depth++) {
        const next = path.join(current, segments[depth]!)
        let stat: fs.Stats
        try {
          stat = fs.lstatSync(next)
        } catch {
          break // missing from here down: a write would create it where the path says
        }
        if (!stat.isSymbolicLink()) {
          current = next
          continue
        }
        let real: string
        try {
          real = fs.realpathSync(next)
        } catch {
          return undefined
        }
        if (!isInside(root, real)) return undefined
        current = real
      }
      return [path.relative(root, current).split(path.sep).join("/"), ...segments.slice(depth)].filter((s) => s !== "").join("/")
    }

    /**
     * Paths whose write would land outside the scope through a symbolic link on the way
     * (`src/api/link -> ../../secrets`): the lexical check alone cannot see those.
     */
    const landingViolations = (paths: ReadonlyArray<string>): ReadonlyArray<string> =>
      paths.filter((p) => {
        const landed = landingOf(p)
        return landed === undefined || (landed !== p && !WriteScope.covers(scope, landed))
      })

    const checkScope = (operation: string, paths: ReadonlyArray<string>) => {
      const outside = WriteScope.violations(scope, paths)
      const violating = outside.length > 0 ? outside : landingViolations(paths)
      return violating.length === 0
        ? Effect.void
        : Effect.fail(new WriteScope.WriteScopeViolation({ operation, violatingPaths: violating, writeScope: scope }))
    }

    const stagePlan = (plan: Plan): StageResult => {
      for (const f of plan.files) {
        switch (f.kind) {
          case "delete":
            setStaged(f.path, MISSING)
            origin.delete(f.path)
            break
          case "update":
            setStaged(f.path, { _tag: "File", bytes: f.after! })
            break
          case "add":
          case "replace":
            setStaged(f.path, { _tag: "File", bytes: f.after! })
            wholeWrite.add(f.path)
            origin.delete(f.path)
            break
          case "move": {
            const from = f.moveFrom!
            const source = origin.get(from) ?? from
            origin.delete(from)
            setStaged(from, MISSING)
            setStaged(f.path, { _tag: "File", bytes: f.after! })
            wholeWrite.add(f.path)
            origin.set(f.path, source)
            break
          }
        }
      }
      const warnings: Array<StageWarning> = []
      for (const f of plan.files) {
        if (f.after !== undefined && f.after.length > maxFileBytes) {
          warnings.push({
            code: "postimage_too_large",
            path: f.path,
            message: `'${f.path}' is now ${f.after.length} bytes, above the ${maxFileBytes}-byte export limit; it will not be exportable unless it shrinks.`
          })
        }
      }
      return {
        changes: plan.files.map((f) => ({
          kind: f.kind,
          path: f.path,
          ...(f.moveFrom === undefined ? {} : { moveFrom: f.moveFrom }),
          ...(f.after === undefined ? {} : { bytes: f.after.length })
        })),
        summary: plan.summary,
        warnings
      }
    }

    // ---------------------------------------------------------------------------------
    // reads
    // ---------------------------------------------------------------------------------

    const readFile = (raw: string) =>
      lock.withPermit(Effect.gen(function*() {
        yield* guardOpen("read_file")
        const p = yield* normalize(raw)
        const state = (yield* viewOf([p])).get(p)!
        switch (state._tag) {
          case "File":
            // A copy: the caller must not be able to change what later reads return.
            return Uint8Array.from(state.bytes)
          case "Missing":
            return yield* viewError("target_missing", p, `'${p}' does not exist in this workspace view.`)
          case "Directory":
            return yield* viewError("unsupported_file_type", p, `'${p}' is a directory; list it with list_dir.`)
          case "Other":
            return yield* viewError("unsupported_file_type", p, `'${p}' is ${state.description}, not a regular file.`)
        }
      }))

    const sharedListing = (dir: string) =>
      Effect.suspend(() => {
        const cached = listings.get(dir)
        if (cached !== undefined) return Effect.succeed(cached)
        try {
          const entries = fs.readdirSync(path.join(root, dir), { withFileTypes: true }).map((e): DirEntry => ({
            name: e.name,
            kind: e.isFile() ? "file" : e.isDirectory() ? "directory" : e.isSymbolicLink() ? "symlink" : "other"
          }))
          listings.set(dir, entries)
          return Effect.succeed(entries as ReadonlyArray<DirEntry>)
        } catch (e) {
          const errno = typeof e === "object" && e !== null && "code" in e ? String(e.code) : String(e)
          return Effect.fail(viewError("path_invalid", dir === "" ? "." : dir, `Cannot list '${dir === "" ? "." : dir}' (${errno}).`))
        }
      })

    const listDir = (raw: string) =>
      lock.withPermit(Effect.gen(function*() {
        yield* guardOpen("list_dir")
        const slashed = raw.replace(/\\/g, "/")
        const isRoot = !slashed.startsWith("/") && slashed.split("/").every((s) => s === "" || s === ".")
        const dir = isRoot ? "" : yield* normalize(raw)
        if (dir !== "") {
          const state = (yield* viewOf([dir])).get(dir)!
          if (state._tag === "Missing") {
            return yield* viewError("target_missing", dir, `Directory '${dir}' does not exist in this workspace view.`)
          }
          if (state._tag === "File") {
            return yield* viewError("unsupported_file_type", dir, `'${dir}' is a file; read it with read_file.`)
          }
          if (state._tag === "Other") {
            return yield* viewError("unsupported_file_type", dir, `'${dir}' is ${state.description}; list the directory it points to.`)
          }
        }
        const names = new Map<string, DirEntry["kind"]>()
        if (dir === "" || base.get(dir)?._tag === "Directory") {
          for (const e of yield* sharedListing(dir)) names.set(e.name, e.kind)
        }
        // What this child saw or wrote overrides the listing, so listings agree with reads.
        const prefix = dir === "" ? "" : `${dir}/`
        for (const p of new Set([...base.keys(), ...staged.keys()])) {
          if (!p.startsWith(prefix) || p.length === prefix.length) continue
          const rest = p.slice(prefix.length)
          const slash = rest.indexOf("/")
          const view = known(p)
          if (view === undefined || view instanceof EngineError) continue
          if (slash === -1) {
            if (view._tag === "File") names.set(rest, "file")
            else if (view._tag === "Directory") names.set(rest, "directory")
            else if (view._tag === "Missing") names.delete(rest)
          } else if (view._tag === "File" && staged.has(p)) {
            names.set(rest.slice(0, slash), "directory")
          }
        }
        return [...names]
          .filter(([name]) => !denied.some((re) => re.test(prefix + name)))
          .map(([name, kind]): DirEntry => ({ name, kind }))
          .sort((a, b) => byCodeUnit(a.name, b.name))
      }))

    // ---------------------------------------------------------------------------------
    // mutations
    // ---------------------------------------------------------------------------------

    const applyPatch = (text: string) =>
      lock.withPermit(Effect.gen(function*() {
        yield* guardOpen("apply_patch")
        const parsed = parsePatch(text, { profile })
        if (Result.isFailure(parsed)) return yield* parsed.failure
        const targets = patchTargets(parsed.success)
        if (Result.isFailure(targets)) return yield* targets.failure
        // Scope first: an out-of-scope patch must not even capture baselines.
        yield* checkScope("apply_patch", targets.success)
        const files = yield* viewOf(targets.success)
        const plan = planPatch(parsed.success, files, { profile, allowOverwrite })
        if (Result.isFailure(plan)) return yield* plan.failure
        return stagePlan(plan.success)
      }))

    const writeFile = (raw: string, bytes: Uint8Array) =>
      lock.withPermit(Effect.gen(function*() {
        yield* guardOpen("write_file")
        const p = yield* normalize(raw)
        yield* checkScope("write_file", [p])
        const state = (yield* viewOf([p])).get(p)!
        if (state._tag === "Directory" || state._tag === "Other") {
          return yield* planError("unsupported_file_type", [p], `Cannot write '${p}': it is ${state._tag === "Directory" ? "a directory" : state.description}.`)
        }
        const after = Uint8Array.from(bytes)
        const before = state._tag === "File" ? state.bytes : undefined
        return stagePlan({
          files: [{ kind: before === undefined ? "add" : "replace", path: p, before, after }],
          summary: [{ status: before === undefined ? "A" : "M", path: p }]
        })
      }))

    const deleteFile = (raw: string) =>
      lock.withPermit(Effect.gen(function*() {
        yield* guardOpen("delete_file")
        const p = yield* normalize(raw)
        yield* checkScope("delete_file", [p])
        const state = (yield* viewOf([p])).get(p)!
        if (state._tag === "Missing") return yield* planError("target_missing", [p], `Cannot delete '${p}': it does not exist.`)
        if (state._tag !== "File") return yield* planError("unsupported_file_type", [p], `Cannot delete '${p}': it is not a regular file.`)
        return stagePlan({ files: [{ kind: "delete", path: p, before: state.bytes, after: undefined }], summary: [{ status: "D", path: p }] })
      }))

    const moveFile = (rawFrom: string, rawTo: string) =>
      lock.withPermit(Effect.gen(function*() {
        yield* guardOpen("move_file")
        const from = yield* normalize(rawFrom)
        const to = yield* normalize(rawTo)
        yield* checkScope("move_file", [from, to])
        if (from === to) return yield* planError("unsafe_move", [from], `Cannot move '${from}' onto itself.`)
        const view = yield* viewOf([from, to])
        const src = view.get(from)!
        const dst = view.get(to)!
        if (src._tag === "Missing") return yield* planError("target_missing", [from], `Cannot move '${from}': it does not exist.`)
        if (src._tag !== "File") return yield* planError("unsupported_file_type", [from], `Cannot move '${from}': it is not a regular file.`)
        if (dst._tag === "Directory" || dst._tag === "Other" || (dst._tag === "File" && !allowOverwrite)) {
          return yield* planError(
            "unsafe_move",
            [from, to],
            `Cannot move '${from}' onto '${to}': the destination exists${dst._tag === "File" ? " and overwriting is not granted" : " and is not a regular file"}.`
          )
        }
        return stagePlan({
          files: [{
            kind: "move",
            path: to,
            moveFrom: from,
            before: src.bytes,
            after: src.bytes,
            ...(dst._tag === "File" ? { overwritten: dst.bytes } : {})
          }],
          summary: [{ status: "M", path: to }]
        })
      }))

    // ---------------------------------------------------------------------------------
    // export
    // ---------------------------------------------------------------------------------

    const baseBytes = (p: string) => {
      const s = base.get(p)
      return s?._tag === "File" ? s.bytes : undefined
    }
    const finalBytes = (p: string) => {
      const s = staged.get(p) ?? base.get(p)
      return s?._tag === "File" ? s.bytes : undefined
    }

    interface Net {
      readonly kind: ChangesetEntry["kind"]
      readonly path: string
      readonly moveFrom?: string
      readonly pre?: Uint8Array
      readonly post?: Uint8Array
      readonly overwritten?: Uint8Array
    }

    /** First preimage + last postimage per path; moves fused when the source ends absent; no-ops dropped. */
    const netChanges = (): ReadonlyArray<Net> => {
      const nets = new Map<string, Net>()
      const consumed = new Set<string>()
      for (const [dest, source] of origin) {
        const pre = baseBytes(source)
        const post = finalBytes(dest)
        if (dest === source || pre === undefined || post === undefined || finalBytes(source) !== undefined) continue
        if (consumed.has(source) || consumed.has(dest)) continue
        consumed.add(source)
        consumed.add(dest)
        const overwritten = baseBytes(dest)
        nets.set(dest, {
          kind: "move",
          path: dest,
          moveFrom: source,
          pre,
          post,
          ...(overwritten === undefined ? {} : { overwritten })
        })
      }
      for (const p of staged.keys()) {
        if (consumed.has(p)) continue
        const pre = baseBytes(p)
        const post = finalBytes(p)
        if (pre === undefined && post === undefined) continue
        if (pre !== undefined && post !== undefined && sameBytes(pre, post)) continue
        const kind = pre === undefined ? "add" : post === undefined ? "delete" : wholeWrite.has(p) ? "replace" : "update"
        nets.set(p, {
          kind,
          path: p,
          ...(pre === undefined ? {} : { pre }),
          ...(post === undefined ? {} : { post })
        })
      }
      return [...nets.values()].sort((a, b) => byCodeUnit(a.path, b.path))
    }

    const image = (p: string, bytes: Uint8Array) => {
      const info = describeText(bytes)
      return {
        path: p,
        hash: sha256(bytes),
        bytes: bytes.length,
        encoding: info.encoding,
        lineEnding: info.lineEnding,
        finalNewline: info.finalNewline
      }
    }
    const preimage = (p: string, bytes: Uint8Array) => {
      const mode = modes.get(p)
      return { ...image(p, bytes), ...(mode === undefined ? {} : { mode }) }
    }

    const exportChangeset = (identity: ExportIdentity) =>
      lock.withPermit(Effect.gen(function*() {
        yield* guardOpen("export")
        const blobs = yield* BlobStore
        const hashes = new Set<string>()
        const entries: Array<ChangesetEncoded["entries"][number]> = []
        for (const n of netChanges()) {
          const pureMove = n.kind === "move" && sameBytes(n.pre!, n.post!)
          let exportable = true
          let reason: { code: "postimage_too_large"; message: string } | undefined
          if (n.post !== undefined) {
            if (n.post.length <= maxFileBytes) {
              hashes.add(yield* blobs.put(n.post))
            } else if (!pureMove) {
              // A pure move needs no blob: the join moves the verified source.
              exportable = false
              reason = {
                code: "postimage_too_large",
                message: `'${n.path}' is ${n.post.length} bytes, above the ${maxFileBytes}-byte per-file export limit; raise the limit or make the file smaller.`
              }
            }
          }
          entries.push({
            path: n.path,
            kind: n.kind,
            ...(n.moveFrom === undefined ? {} : { moveFrom: n.moveFrom }),
            ...(n.pre === undefined ? {} : { preimage: preimage(n.moveFrom ?? n.path, n.pre) }),
            ...(n.post === undefined ? {} : { postimage: image(n.path, n.post) }),
            ...(n.overwritten === undefined ? {} : { overwritten: preimage(n.path, n.overwritten) }),
            exportable,
            ...(reason === undefined ? {} : { reason })
          })
        }
        const candidate: ChangesetEncoded = {
          schemaVersion: 1,
          childId: identity.childId,
          taskId: identity.taskId,
          threadId: identity.threadId,
          writeScope: [...scope],
          exportable: entries.every((e) => e.exportable),
          limits: { maxFileBytes },
          blobs: { addressing: "sha256", hashes: [...hashes].sort(byCodeUnit) },
          entries
        }
        // Every changeset leaves through its schema: a mistake here is a bug, never a bad export.
        const decoded = Schema.decodeUnknownResult(Changeset, untrustedChangesetOptions)(candidate)
        if (Result.isFailure(decoded)) {
          return yield* Effect.die(new Error(`Overlay.export built an invalid changeset: ${decoded.failure.message}`))
        }
        closed = "exported"
        clear()
        return decoded.success
      }))

    const clear = () => {
      base.clear()
      modes.clear()
      staged.clear()
      stagedFilesBelow.clear()
      wholeWrite.clear()
      origin.clear()
      listings.clear()
    }

    const discard = lock.withPermit(Effect.sync(() => {
      if (closed === undefined) closed = "discarded"
      clear()
    }))

    return {
      writeScope: scope,
      maxFileBytes,
      readFile,
      listDir,
      applyPatch,
      writeFile,
      deleteFile,
      moveFile,
      export: exportChangeset,
      discard
    } satisfies Overlay
  })
