/**
 * The CLI's small all-or-nothing writer for a `@forkjoin/patch` plan (SPEC §3 stages 7–8
 * without locks, journal or history, which belong to the engine issue): stage every new
 * content in a fsynced temp file beside its target, then rename/unlink into place, and on
 * any failure restore every already-committed target from the bytes read before planning.
 */
import { EngineError } from "@forkjoin/schema/EngineError"
import type { Plan } from "@forkjoin/patch"
import { randomBytes } from "node:crypto"
import * as nodeFs from "node:fs"
import * as path from "node:path"
import type { ResolvedTarget } from "./workspace.ts"

/**
 * The node:fs calls the writer makes; tests wrap the real module to inject failures.
 */
export type WriterIo = Pick<
  typeof nodeFs,
  | "openSync"
  | "writeSync"
  | "fsyncSync"
  | "fchmodSync"
  | "closeSync"
  | "renameSync"
  | "unlinkSync"
  | "mkdirSync"
  | "rmdirSync"
  | "existsSync"
>

/** The final state the plan wants at one absolute path. */
interface Step {
  readonly path: string
  readonly absolute: string
  /** `undefined` removes the file. */
  readonly after: Uint8Array | undefined
  readonly mode: number | undefined
  readonly original: ResolvedTarget
}

const describe = (error: unknown): string =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? `${error.code}${"message" in error && typeof error.message === "string" ? `: ${error.message}` : ""}`
    : String(error)

const tempPathFor = (absolute: string): string =>
  path.join(path.dirname(absolute), `.${path.basename(absolute)}.forkjoin-${randomBytes(6).toString("hex")}.tmp`)

/** Writes `bytes` to a fresh temp file beside `absolute`, fsynced, and returns its path. */
const stageFile = (io: WriterIo, absolute: string, bytes: Uint8Array, mode: number | undefined): string => {
  const temp = tempPathFor(absolute)
  // `wx`: never reuse or clobber an existing file with the temp name.
  const fd = io.openSync(temp, "wx", 0o666)
  try {
    // Keep the permission bits of the file being replaced (e.g. an executable script).
    if (mode !== undefined) io.fchmodSync(fd, mode)
    let offset = 0
    while (offset < bytes.length) offset += io.writeSync(fd, bytes, offset, bytes.length - offset)
    io.fsyncSync(fd)
  } catch (error) {
    io.closeSync(fd)
    try {
      io.unlinkSync(temp)
    } catch {
      // The temp may not exist any more; the original error is what matters.
    }
    throw error
  }
  io.closeSync(fd)
  return temp
}

// Directory fsync makes renames durable; some filesystems refuse it (EINVAL), which must not
// turn a completed commit into a failure.
const fsyncDirectory = (io: WriterIo, dir: string): void => {
  try {
    const fd = io.openSync(dir, "r")
    try {
      io.fsyncSync(fd)
    } finally {
      io.closeSync(fd)
    }
  } catch {
    // best effort, see above
  }
}

/** Creates the missing ancestors of `dir` top-down and returns those it created. */
const createDirectories = (io: WriterIo, dir: string, created: Array<string>): void => {
  const missing: Array<string> = []
  let current = dir
  while (!io.existsSync(current)) {
    missing.push(current)
    const parent = path.dirname(current)
    if (parent === current) break
    current = parent
  }
  for (const d of missing.reverse()) {
    io.mkdirSync(d)
    created.push(d)
  }
}

/** Computes one final state per path: a move's source disappears unless the plan rewrites it. */
const stepsOf = (plan: Plan, targets: ReadonlyMap<string, ResolvedTarget>): ReadonlyArray<Step> => {
  const targetOf = (rel: string): ResolvedTarget => {
    const t = targets.get(rel)
    if (t === undefined) {
      throw new EngineError({
        code: "commit_failed",
        stage: 8,
        paths: [rel],
        message: `Internal error: the plan touches '${rel}', which was never resolved; nothing was written.`
      })
    }
    return t
  }
  const steps = new Map<string, Step>()
  for (const file of plan.files) {
    const original = targetOf(file.path)
    const source = file.moveFrom === undefined ? undefined : targetOf(file.moveFrom)
    steps.set(file.path, {
      path: file.path,
      absolute: original.absolute,
      after: file.after,
      // A moved file keeps the mode it had at its source, like `git mv`.
      mode: original.mode ?? source?.mode,
      original
    })
  }
  for (const file of plan.files) {
    if (file.kind === "move" && file.moveFrom !== undefined && !steps.has(file.moveFrom)) {
      const original = targetOf(file.moveFrom)
      steps.set(file.moveFrom, { path: file.moveFrom, absolute: original.absolute, after: undefined, mode: undefined, original })
    }
  }
  return [...steps.values()]
}

/** Puts one path back to what was read before planning (bytes and mode, or absence). */
const restore = (io: WriterIo, step: Step): void => {
  const state = step.original.state
  if (state._tag === "File") {
    const temp = stageFile(io, step.absolute, state.bytes, step.original.mode)
    io.renameSync(temp, step.absolute)
  } else {
    try {
      io.unlinkSync(step.absolute)
    } catch (error) {
      if (!(typeof error === "object" && error !== null && "code" in error && error.code === "ENOENT")) throw error
    }
  }
}

/**
 * Applies `plan` to the resolved targets all-or-nothing. Throws an `EngineError`
 * (`commit_failed`, stage 8) after restoring every touched path and removing temps and
 * created directories.
 */
export const writePlan = (
  plan: Plan,
  targets: ReadonlyMap<string, ResolvedTarget>,
  io: WriterIo = nodeFs
): void => {
  const steps = stepsOf(plan, targets)
  const temps = new Map<Step, string>()
  const createdDirs: Array<string> = []
  const committed: Array<Step> = []
  let current: Step | undefined

  const cleanup = (): Array<string> => {
    const unrestored: Array<string> = []
    for (const step of [...committed].reverse()) {
      try {
        restore(io, step)
      } catch {
        unrestored.push(step.path)
      }
    }
    for (const temp of temps.values()) {
      try {
        io.unlinkSync(temp)
      } catch {
        // already renamed into place (and then restored) or never created
      }
    }
    for (const dir of [...createdDirs].reverse()) {
      try {
        io.rmdirSync(dir)
      } catch {
        // not empty: something else lives there now, so it is not ours to remove
      }
    }
    return unrestored
  }

  try {
    // Stage 7: every new content lands in a fsynced temp beside its target before any rename.
    for (const step of steps) {
      current = step
      if (step.after === undefined) continue
      createDirectories(io, path.dirname(step.absolute), createdDirs)
      temps.set(step, stageFile(io, step.absolute, step.after, step.mode))
    }
    // Stage 8: commit in plan order; each rename or unlink is atomic per file.
    for (const step of steps) {
      current = step
      const temp = temps.get(step)
      if (temp === undefined) io.unlinkSync(step.absolute)
      else {
        io.renameSync(temp, step.absolute)
        temps.delete(step)
      }
      committed.push(step)
    }
  } catch (error) {
    const unrestored = cleanup()
    const failedPath = current?.path
    throw new EngineError({
      code: "commit_failed",
      stage: 8,
      paths: [...new Set([...(failedPath === undefined ? [] : [failedPath]), ...unrestored])],
      message: unrestored.length === 0
        ? `Writing ${failedPath === undefined ? "the plan" : `'${failedPath}'`} failed (${describe(error)}); every file was restored and the workspace is unchanged. Fix the cause and retry.`
        : `Writing '${failedPath}' failed (${describe(error)}) and restoring ${unrestored.map((p) => `'${p}'`).join(", ")} also failed; those files may hold the new content. Inspect them before retrying.`
    })
  }

  const dirs = new Set<string>()
  for (const step of steps) dirs.add(path.dirname(step.absolute))
  for (const dir of createdDirs) dirs.add(path.dirname(dir))
  for (const dir of dirs) fsyncDirectory(io, dir)
}
