/**
 * Plans a parsed patch against the files the shell read: applies every operation, in patch
 * order, to an in-memory virtual workspace (a later operation sees an earlier one's result,
 * as Codex's applier does) and returns the net per-path effect with full before/after bytes.
 * Nothing is written here; any failure means nothing will be.
 *
 * @since 0.1.0
 */
import type { RelativePath } from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Result from "effect/Result"
import { byteView, sameBytes } from "./Bytes.ts"
import { applyChunks } from "./internal/applyChunks.ts"
import { type ParsedPatch, parsePatch } from "./Parser.ts"
import type { FileState, Plan, PlannedFile, PlanOptions, SummaryLine } from "./Plan.ts"
import { normalizeRelativePath } from "./RelativePath.ts"
import { decodeUtf8, hasBom } from "./TextInfo.ts"

const encoder = new TextEncoder()

const planError = (code: EngineError["code"], paths: ReadonlyArray<string>, message: string) =>
  new EngineError({ code, stage: Stage.plan, paths, message })

/**
 * The normalized relative paths a patch reads or writes (sources and move destinations),
 * in first-mention order; the shell must provide a `FileState` for each.
 *
 * @category combinators
 * @since 0.1.0
 */
export const patchTargets = (patch: ParsedPatch): Result.Result<ReadonlyArray<string>, EngineError> => {
  const seen = new Set<string>()
  for (const op of patch.operations) {
    for (const raw of op._tag === "UpdateFile" && op.moveTo !== undefined ? [op.path, op.moveTo] : [op.path]) {
      const r = normalizeRelativePath(raw)
      if (Result.isFailure(r)) return Result.fail(r.failure)
      seen.add(r.success)
    }
  }
  return Result.succeed([...seen])
}

type Writer = "add" | "update" | "move"

/**
 * Plans `patch` against `files` (keyed by normalized relative path, one entry per
 * `patchTargets` path). Fails with the stage-5 code a model can act on:
 * `target_missing`, `target_exists`, `context_not_found`, `ambiguous_context`,
 * `unsupported_file_type`, `unsafe_move`; an empty patch is `patch_syntax`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const planPatch = (
  patch: ParsedPatch,
  files: ReadonlyMap<string, FileState>,
  options: PlanOptions
): Result.Result<Plan, EngineError> => {
  if (patch.operations.length === 0) {
    return Result.fail(new EngineError({ code: "patch_syntax", stage: Stage.parse, paths: [], message: "No files were modified." }))
  }
  const native = options.profile === "native"
  const vfs = new Map<RelativePath, FileState>()
  const order: Array<RelativePath> = []
  const writer = new Map<RelativePath, Writer>()
  const moves: Array<{ from: RelativePath; to: RelativePath }> = []
  const summary: Array<SummaryLine> = []
  // Paths an earlier operation of this patch removed, so a later one can say so.
  const removed = new Map<RelativePath, { readonly movedTo?: RelativePath }>()
  const state = (path: RelativePath): FileState | undefined => {
    const v = vfs.get(path)
    if (v !== undefined) return v
    const s = files.get(path)
    if (s === undefined) return undefined
    vfs.set(path, s)
    order.push(path)
    return s
  }
  const norm = (raw: string) => normalizeRelativePath(raw)
  const noState = (path: RelativePath) =>
    Result.fail(planError("path_invalid", [path], `No file state was read for '${path}' (internal: read every patchTargets path).`))
  const notRegular = (path: RelativePath, s: FileState, verb: string) =>
    Result.fail(
      planError(
        "unsupported_file_type",
        [path],
        `${verb} ${path}: it is ${s._tag === "Directory" ? "a directory" : s._tag === "Other" ? s.description : "not a file"}, not a regular file.`
      )
    )

  for (const op of patch.operations) {
    const p = norm(op.path)
    if (Result.isFailure(p)) return Result.fail(p.failure)
    const path = p.success
    const s = state(path)
    if (s === undefined) return noState(path)
    switch (op._tag) {
      case "AddFile": {
        if (s._tag === "Directory" || s._tag === "Other") return notRegular(path, s, "Failed to write file")
        if (s._tag === "File" && native && !options.allowOverwrite) {
          return Result.fail(
            planError(
              "target_exists",
              [path],
              `Add File target ${path} already exists; change it with '*** Update File: ${path}', or allow replacing it (forkjoin apply --allow-overwrite, the overwrite grant).`
            )
          )
        }
        vfs.set(path, { _tag: "File", bytes: encoder.encode(op.contents) })
        removed.delete(path)
        writer.set(path, "add")
        summary.push({ status: "A", path })
        break
      }
      case "DeleteFile": {
        if (s._tag === "Missing") {
          const gone = removed.get(path)
          const why = gone === undefined
            ? "it does not exist"
            : gone.movedTo === undefined
            ? "it was already deleted earlier in this patch; delete it once"
            : `it was moved to ${gone.movedTo} earlier in this patch; delete ${gone.movedTo} instead, or drop this delete`
          return Result.fail(planError("target_missing", [path], `Failed to delete file ${path}: ${why}.`))
        }
        if (s._tag !== "File") return notRegular(path, s, "Failed to delete file")
        vfs.set(path, { _tag: "Missing" })
        writer.delete(path)
        removed.set(path, {})
        summary.push({ status: "D", path })
        break
      }
      case "UpdateFile": {
        if (s._tag === "Missing") {
          return Result.fail(
            planError(
              "target_missing",
              [path],
              `Failed to read file to update ${path}: No such file or directory (os error 2)`
            )
          )
        }
        if (s._tag !== "File") return notRegular(path, s, "Failed to read file to update")
        const updated = updateBytes(path, s.bytes, op.chunks, options)
        if (Result.isFailure(updated)) return Result.fail(updated.failure)
        if (op.moveTo === undefined) {
          vfs.set(path, { _tag: "File", bytes: updated.success })
          if (writer.get(path) === undefined) writer.set(path, "update")
          summary.push({ status: "M", path })
          break
        }
        const d = norm(op.moveTo)
        if (Result.isFailure(d)) return Result.fail(d.failure)
        const dest = d.success
        if (dest === path) {
          // Codex writes the destination then removes the source: a self-move deletes the file.
          return Result.fail(planError("unsafe_move", [path], `Move to: ${dest} names the file itself; drop the '*** Move to:' line.`))
        }
        const ds = state(dest)
        if (ds === undefined) return noState(dest)
        if (ds._tag === "Directory" || ds._tag === "Other") {
          return Result.fail(planError("unsafe_move", [path, dest], `Cannot move ${path} onto ${dest}: the destination is not a regular file.`))
        }
        if (ds._tag === "File" && native && !options.allowOverwrite) {
          return Result.fail(
            planError(
              "unsafe_move",
              [path, dest],
              `Move destination ${dest} already exists; choose a new path, or allow replacing it (forkjoin apply --allow-overwrite, the overwrite grant).`
            )
          )
        }
        vfs.set(dest, { _tag: "File", bytes: updated.success })
        vfs.set(path, { _tag: "Missing" })
        removed.set(path, { movedTo: dest })
        removed.delete(dest)
        writer.set(dest, "move")
        writer.delete(path)
        moves.push({ from: path, to: dest })
        summary.push({ status: "M", path: dest })
        break
      }
    }
  }
  return Result.succeed({ files: netChanges(files, vfs, order, writer, moves), summary: codexOrder(summary) })
}

const updateBytes = (
  path: string,
  bytes: Uint8Array,
  chunks: Parameters<typeof applyChunks>[2],
  options: PlanOptions
): Result.Result<Uint8Array, EngineError> => {
  const native = options.profile === "native"
  const decoded = decodeUtf8(bytes)
  if (decoded === undefined || (native && byteView(bytes).indexOf(0) !== -1)) {
    return Result.fail(
      planError(
        "unsupported_file_type",
        [path],
        `Failed to read file to update ${path}: it is binary or not valid UTF-8 text. Patches edit text only; replace binary files whole.`
      )
    )
  }
  if (!native) {
    const r = applyChunks(path, decoded, chunks, options.preserveLineEndings === true ? "codexPreserve" : "legacy")
    return Result.isFailure(r) ? Result.fail(r.failure) : Result.succeed(encoder.encode(r.success))
  }
  const bom = hasBom(bytes)
  const r = applyChunks(path, bom ? decoded.slice(1) : decoded, chunks, "native")
  return Result.isFailure(r) ? Result.fail(r.failure) : Result.succeed(encoder.encode(bom ? "\uFEFF" + r.success : r.success))
}

const bytesOf = (s: FileState | undefined): Uint8Array | undefined => (s?._tag === "File" ? s.bytes : undefined)

const netChanges = (
  initial: ReadonlyMap<string, FileState>,
  vfs: ReadonlyMap<RelativePath, FileState>,
  order: ReadonlyArray<RelativePath>,
  writer: ReadonlyMap<RelativePath, Writer>,
  moves: ReadonlyArray<{ from: RelativePath; to: RelativePath }>
): Array<PlannedFile> => {
  const entries = new Map<RelativePath, PlannedFile>()
  for (const path of order) {
    const before = bytesOf(initial.get(path))
    const after = bytesOf(vfs.get(path))
    if (before === undefined && after === undefined) continue
    if (before !== undefined && after !== undefined && sameBytes(before, after)) continue
    const kind = before === undefined
      ? "add"
      : after === undefined
      ? "delete"
      : writer.get(path) === "update"
      ? "update"
      : "replace"
    entries.set(path, { kind, path, before, after })
  }
  // Fuse a source deletion and its destination write into one `move` when nothing else touched them.
  for (const { from, to } of moves) {
    const src = entries.get(from)
    const dst = entries.get(to)
    if (src?.kind !== "delete" || dst === undefined || writer.get(to) !== "move" || dst.after === undefined) continue
    const overwritten = bytesOf(initial.get(to))
    entries.delete(from)
    entries.set(to, {
      kind: "move",
      path: to,
      moveFrom: from,
      before: src.before,
      after: dst.after,
      ...(overwritten === undefined ? {} : { overwritten })
    })
  }
  return [...entries.values()]
}

const codexOrder = (summary: ReadonlyArray<SummaryLine>): Array<SummaryLine> => [
  ...summary.filter((l) => l.status === "A"),
  ...summary.filter((l) => l.status === "M"),
  ...summary.filter((l) => l.status === "D")
]

/**
 * Parses and plans in one step, reading file states through `read` (called once per target).
 *
 * @category constructors
 * @since 0.1.0
 */
export const compilePatch = (
  text: string,
  read: (path: string) => FileState,
  options: PlanOptions
): Result.Result<Plan, EngineError> => {
  const parsed = parsePatch(text, { profile: options.profile })
  if (Result.isFailure(parsed)) return Result.fail(parsed.failure)
  const targets = patchTargets(parsed.success)
  if (Result.isFailure(targets)) return Result.fail(targets.failure)
  const files = new Map<string, FileState>()
  for (const t of targets.success) files.set(t, read(t))
  return planPatch(parsed.success, files, options)
}
