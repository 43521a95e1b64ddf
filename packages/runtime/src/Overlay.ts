/**
 * The workspace view of a `changeset_export` child (SPEC §6.2–6.3). Reads return the child's
 * staged content when it wrote the path, else the shared content captured through
 * `Engine.inspect` at the child's first touch of that path (repeatable reads; the engine's
 * answer also carries the mode and snapshot facts the export's preimages use). Mutations
 * (`apply_patch`, whole-file writes, deletes, moves) are checked against the write scope —
 * lexically, then where the engine says each write would land through symbolic links — then
 * planned by the pure patch core against this view — so a patch sees the child's own earlier
 * edits — and staged in memory. Nothing is ever written to the shared workspace, not even
 * temporarily; at a clean finish `export` turns the staged state into a `Changeset` whose
 * postimages go to the `BlobStore`.
 *
 * It is the service shell: locking, engine calls, listings and export. The state and its pure
 * transitions are `internal/overlayState.ts`; path resolution is the engine's. It does not own
 * sessions, drivers or action observations (the session runtime), nor applying changesets
 * (the join, through the engine).
 *
 * @since 0.1.0
 */
import { Engine, type Inspection } from "@forkjoin/engine/Engine"
import {
  byCodeUnit,
  factsOf,
  parsePatch,
  patchTargets,
  type Plan,
  type PlannedFile,
  planPatch,
  type Profile,
  sameBytes,
  type SummaryLine
} from "@forkjoin/patch"
import {
  Changeset,
  type ChangesetEncoded,
  type TaskId,
  type ThreadId,
  untrustedChangesetOptions
} from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import { BlobStore, type BlobStoreError } from "./BlobStore.ts"
import { compileGlob, DEFAULT_DENIED_GLOBS } from "./internal/glob.ts"
import { listedDirectory, normalize, readDirectory, visibleEntries } from "./internal/listing.ts"
import * as OverlayState from "./internal/overlayState.ts"
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
  /** Globs hidden from listings; keep equal to the engine's policy (default: any `.git/` or `.forkjoin/` folder, at any depth). */
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
 * What an overlay reads the shared content through: each path's resolution (state, mode, where
 * a write lands, snapshot facts: the engine's `inspect`) and a folder's entries. The engine's
 * workspace by default (`engineBase`); a runner reads the parent's baseline through one.
 * A failure of the base itself (not of a path) should die: the child must not see it as an
 * answer about the workspace.
 *
 * @category models
 * @since 0.1.0
 */
export interface Base {
  readonly inspect: (paths: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, Result.Result<Inspection, EngineError>>, EngineError>
  /** The entries of `dir` (`""` = the root); denied names may be included, the overlay hides them. */
  readonly listDir: (dir: string) => Effect.Effect<ReadonlyArray<DirEntry>, EngineError>
}

/**
 * The engine's workspace as a `Base`: `Engine.inspect`, and folders read from disk.
 *
 * @category constructors
 * @since 0.1.0
 */
export const engineBase = (engine: Engine["Service"]): Base => ({
  inspect: (paths) => engine.inspect(paths),
  listDir: (dir) => Effect.suspend(() => Effect.fromResult(readDirectory(engine.root, dir)))
})

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

/** Stage 3 is where the engine reports path and read problems; the overlay uses the same. */
const viewError = (code: EngineError["code"], p: string, message: string, cause?: unknown) =>
  new EngineError({ code, stage: Stage.resolve, paths: [p], message, ...(cause === undefined ? {} : { cause }) })

const planError = (code: EngineError["code"], paths: ReadonlyArray<string>, message: string) =>
  new EngineError({ code, stage: Stage.plan, paths, message })

type Inspected = ReadonlyMap<string, Result.Result<Inspection, EngineError>>

/**
 * Creates an empty overlay over the engine's workspace. Nothing is read until first touch.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: OverlayOptions): Effect.Effect<Overlay, never, Engine> =>
  Effect.gen(function*() {
    return yield* makeOn(engineBase(yield* Engine), options)
  })

/**
 * Creates an empty overlay over `base`. Nothing is read until first touch.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeOn = (base: Base, options: OverlayOptions): Effect.Effect<Overlay> =>
  Effect.gen(function*() {
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

    let state: OverlayState.OverlayState = OverlayState.empty
    let closed: "exported" | "discarded" | undefined

    const guardOpen = (operation: string) =>
      closed === undefined ? Effect.void : Effect.fail(new OverlayClosed({ operation, state: closed }))

    /** The engine's resolution of each distinct path (one call; it fails whole only on aliasing paths). */
    const inspect = (paths: ReadonlyArray<string>): Effect.Effect<Inspected, EngineError> =>
      paths.length === 0 ? Effect.succeed(new Map()) : base.inspect([...new Set(paths)])

    /**
     * Captures the baseline of every path not yet touched (from `inspected` when the caller
     * already asked the engine, else one `Engine.inspect` for those the state cannot derive),
     * then answers each from the view.
     */
    const viewOf = (paths: ReadonlyArray<string>, inspected?: Inspected) =>
      Effect.gen(function*() {
        const pending = OverlayState.pendingBaselines(state, paths)
        state = OverlayState.capture(state, pending.derived.map(([p, s]) => [p, { state: s, inspection: undefined }] as const))
        if (pending.unknown.length > 0) {
          const answers = inspected ?? (yield* inspect(pending.unknown))
          const read: Array<readonly [string, OverlayState.Baseline]> = []
          for (const p of pending.unknown) {
            const r = answers.get(p)
            if (r === undefined) read.push([p, { state: OverlayState.MISSING, inspection: undefined }])
            else if (Result.isFailure(r)) return yield* r.failure
            else read.push([p, { state: r.success.state, inspection: r.success }])
          }
          state = OverlayState.capture(state, read)
        }
        const view = OverlayState.viewAll(state, paths)
        if (view instanceof EngineError) return yield* view
        return view
      })

    /**
     * True when a write to `p` would land outside the scope through a symbolic link on the way
     * (`src/api/link -> ../../secrets`), which the lexical check alone cannot see: the engine's
     * landing is outside the workspace or the scope, or its resolution refused a link leading
     * out of the workspace (or dangling), or into a denied path the lexical `p` is not in.
     */
    const landsOutside = (p: string, r: Result.Result<Inspection, EngineError> | undefined): boolean => {
      if (r === undefined) return false
      if (Result.isSuccess(r)) {
        const landed = r.success.landing
        return landed === undefined || (landed !== p && !WriteScope.covers(scope, landed))
      }
      const code = r.failure.code
      return code === "path_outside_roots" || (code === "path_denied_by_policy" && !denied.some((re) => re.test(p)))
    }

    /**
     * The scope check, before anything is captured as a baseline: lexical first, then where
     * each write would land. Returns the engine's inspections for the view to capture from.
     */
    const checkScope = (operation: string, paths: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const outside = WriteScope.violations(scope, paths)
        const inspected = outside.length > 0 ? new Map() as Inspected : yield* inspect(paths)
        const violating = outside.length > 0 ? outside : paths.filter((p) => landsOutside(p, inspected.get(p)))
        if (violating.length > 0) {
          return yield* new WriteScope.WriteScopeViolation({ operation, violatingPaths: violating, writeScope: scope })
        }
        return inspected
      })

    const stagePlan = (plan: Plan): StageResult => {
      state = OverlayState.stage(state, plan)
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
        const fileState = (yield* viewOf([p])).get(p)!
        switch (fileState._tag) {
          case "File":
            // A copy: the caller must not be able to change what later reads return.
            return Uint8Array.from(fileState.bytes)
          case "Missing":
            return yield* viewError("target_missing", p, `'${p}' does not exist in this workspace view.`)
          case "Directory":
            return yield* viewError("unsupported_file_type", p, `'${p}' is a directory; list it with list_dir.`)
          case "Other":
            return yield* viewError("unsupported_file_type", p, `'${p}' is ${fileState.description}, not a regular file.`)
        }
      }))

    const sharedListing = (dir: string) =>
      Effect.suspend(() => {
        const cached = state.listings.get(dir)
        if (cached !== undefined) return Effect.succeed(cached)
        return base.listDir(dir).pipe(Effect.tap((entries) =>
          Effect.sync(() => {
            state = OverlayState.cacheListing(state, dir, entries)
          })
        ))
      })

    const listDir = (raw: string) =>
      lock.withPermit(Effect.gen(function*() {
        yield* guardOpen("list_dir")
        const dir = yield* listedDirectory(raw)
        if (dir !== "") {
          const dirState = (yield* viewOf([dir])).get(dir)!
          if (dirState._tag === "Missing") {
            return yield* viewError("target_missing", dir, `Directory '${dir}' does not exist in this workspace view.`)
          }
          if (dirState._tag === "File") {
            return yield* viewError("unsupported_file_type", dir, `'${dir}' is a file; read it with read_file.`)
          }
          if (dirState._tag === "Other") {
            return yield* viewError("unsupported_file_type", dir, `'${dir}' is ${dirState.description}; list the directory it points to.`)
          }
        }
        const shared = OverlayState.needsSharedListing(state, dir) ? yield* sharedListing(dir) : []
        return visibleEntries(OverlayState.knownListing(state, dir, shared), dir, denied)
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
        const inspected = yield* checkScope("apply_patch", targets.success)
        const files = yield* viewOf(targets.success, inspected)
        const plan = planPatch(parsed.success, files, { profile, allowOverwrite })
        if (Result.isFailure(plan)) return yield* plan.failure
        return stagePlan(plan.success)
      }))

    const writeFile = (raw: string, bytes: Uint8Array) =>
      lock.withPermit(Effect.gen(function*() {
        yield* guardOpen("write_file")
        const p = yield* normalize(raw)
        const inspected = yield* checkScope("write_file", [p])
        const current = (yield* viewOf([p], inspected)).get(p)!
        if (current._tag === "Directory" || current._tag === "Other") {
          return yield* planError("unsupported_file_type", [p], `Cannot write '${p}': it is ${current._tag === "Directory" ? "a directory" : current.description}.`)
        }
        const after = Uint8Array.from(bytes)
        const before = current._tag === "File" ? current.bytes : undefined
        return stagePlan({
          files: [{ kind: before === undefined ? "add" : "replace", path: p, before, after }],
          summary: [{ status: before === undefined ? "A" : "M", path: p }]
        })
      }))

    const deleteFile = (raw: string) =>
      lock.withPermit(Effect.gen(function*() {
        yield* guardOpen("delete_file")
        const p = yield* normalize(raw)
        const inspected = yield* checkScope("delete_file", [p])
        const current = (yield* viewOf([p], inspected)).get(p)!
        if (current._tag === "Missing") return yield* planError("target_missing", [p], `Cannot delete '${p}': it does not exist.`)
        if (current._tag !== "File") return yield* planError("unsupported_file_type", [p], `Cannot delete '${p}': it is not a regular file.`)
        return stagePlan({ files: [{ kind: "delete", path: p, before: current.bytes, after: undefined }], summary: [{ status: "D", path: p }] })
      }))

    const moveFile = (rawFrom: string, rawTo: string) =>
      lock.withPermit(Effect.gen(function*() {
        yield* guardOpen("move_file")
        const from = yield* normalize(rawFrom)
        const to = yield* normalize(rawTo)
        const inspected = yield* checkScope("move_file", [from, to])
        if (from === to) return yield* planError("unsafe_move", [from], `Cannot move '${from}' onto itself.`)
        const view = yield* viewOf([from, to], inspected)
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

    const image = (p: string, bytes: Uint8Array) => ({ path: p, ...factsOf(bytes) })
    /** A baseline's image: the engine's facts and mode from its inspection when it has one. */
    const preimage = (p: string, bytes: Uint8Array) => {
      const inspection = state.base.get(p)?.inspection
      const mode = inspection?.mode
      return { path: p, ...(inspection?.facts ?? factsOf(bytes)), ...(mode === undefined ? {} : { mode }) }
    }

    const exportChangeset = (identity: ExportIdentity) =>
      lock.withPermit(Effect.gen(function*() {
        yield* guardOpen("export")
        const blobs = yield* BlobStore
        const hashes = new Set<string>()
        const entries: Array<ChangesetEncoded["entries"][number]> = []
        for (const n of OverlayState.netChanges(state)) {
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
        state = OverlayState.empty
        return decoded.success
      }))

    const discard = lock.withPermit(Effect.sync(() => {
      if (closed === undefined) closed = "discarded"
      state = OverlayState.empty
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
