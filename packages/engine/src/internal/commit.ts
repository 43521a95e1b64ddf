/**
 * Engine stages 7–8 on disk: stage every new content in a fsynced temp file beside its
 * target (creating missing directories), then rename/unlink into place in plan order, and on
 * any failure restore every already-committed target, in reverse order, from the bytes read
 * under the lock. The journal and history around these steps live in `commitLocked.ts`.
 */
import type { Plan } from "@forkjoin/patch"
import { describeSystemError, errnoOf, remedyOf } from "@forkjoin/patch/SystemError"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import type { RelativePath } from "@forkjoin/schema"
import { randomBytes } from "node:crypto"
import * as nodeFs from "node:fs"
import * as path from "node:path"
import { PROGRESS_EVERY } from "../Progress.ts"
import type { ResolvedTarget } from "./resolve.ts"
import { type Pausable, runNow } from "./turns.ts"

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
export interface Step {
  readonly path: RelativePath
  readonly absolute: string
  /** `undefined` removes the file. */
  readonly after: Uint8Array | undefined
  readonly mode: number | undefined
  readonly original: ResolvedTarget
}

/** The closing advice of a commit message: what to do about the error's code, then retry. */
const retryAdvice = (error: unknown): string => {
  const remedy = remedyOf(error)
  return remedy === undefined ? "Fix the cause and retry." : `${remedy[0]!.toUpperCase()}${remedy.slice(1)}, then retry.`
}

/** The temp file name beside `absolute`; `tag` (the intent id) lets repair find leftovers. */
export const tempPathFor = (absolute: string, tag: string): string =>
  path.join(path.dirname(absolute), `.${path.basename(absolute)}.fj-${tag}.tmp`)

/** Writes `bytes` to a fresh temp file beside `absolute`, fsynced, and returns its path. */
const stageFile = (io: WriterIo, absolute: string, bytes: Uint8Array, mode: number | undefined, tag: string): string => {
  const temp = tempPathFor(absolute, tag)
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
export const fsyncDirectory = (io: WriterIo, dir: string): void => {
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
export const stepsOf = (plan: Plan, targets: ReadonlyMap<string, ResolvedTarget>): ReadonlyArray<Step> => {
  const targetOf = (rel: string): ResolvedTarget => {
    const t = targets.get(rel)
    if (t === undefined) {
      throw new EngineError({
        code: "commit_failed",
        stage: Stage.commit,
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
    const temp = stageFile(io, step.absolute, state.bytes, step.original.mode, `restore-${randomBytes(4).toString("hex")}`)
    io.renameSync(temp, step.absolute)
  } else {
    try {
      io.unlinkSync(step.absolute)
    } catch (error) {
      if (errnoOf(error) !== "ENOENT") throw error
    }
  }
}

/** Temps and directories created by `stageSteps`, to commit or discard. */
export interface Staged {
  readonly steps: ReadonlyArray<Step>
  readonly temps: Map<Step, string>
  /** Absolute directories created, parents first. */
  readonly createdDirs: ReadonlyArray<string>
}

const removeTempsAndDirs = (io: WriterIo, temps: Iterable<string>, createdDirs: ReadonlyArray<string>): void => {
  for (const temp of temps) {
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
}

/**
 * Stage 7 on disk: creates missing directories and writes every new content to a fsynced
 * temp file beside its target, pausing after each file (`runWithTurns`: the targets are not
 * touched yet). On failure removes what it created and throws `commit_failed`.
 * `progress(done, total)` runs every `PROGRESS_EVERY` steps and after the last one.
 */
export function* stagingSteps(
  io: WriterIo,
  steps: ReadonlyArray<Step>,
  tag: string,
  progress?: (done: number, total: number) => void
): Pausable<Staged> {
  const temps = new Map<Step, string>()
  const createdDirs: Array<string> = []
  let current: Step | undefined
  let done = 0
  try {
    for (const step of steps) {
      current = step
      if (step.after !== undefined) {
        createDirectories(io, path.dirname(step.absolute), createdDirs)
        temps.set(step, stageFile(io, step.absolute, step.after, step.mode, tag))
      }
      if (progress !== undefined && ++done % PROGRESS_EVERY === 0) progress(done, steps.length)
      yield
    }
    if (done % PROGRESS_EVERY !== 0) progress?.(done, steps.length)
  } catch (error) {
    removeTempsAndDirs(io, temps.values(), createdDirs)
    throw new EngineError({
      code: "commit_failed",
      stage: Stage.stage,
      paths: current === undefined ? [] : [current.path],
      message: `Staging ${current === undefined ? "the plan" : `'${current.path}'`} failed (${describeSystemError(error)}); nothing was changed. ${retryAdvice(error)}`,
      cause: error
    })
  }
  return { steps, temps, createdDirs }
}

/** `stagingSteps` at once, without pausing. */
export const stageSteps = (
  io: WriterIo,
  steps: ReadonlyArray<Step>,
  tag: string,
  progress?: (done: number, total: number) => void
): Staged => runNow(stagingSteps(io, steps, tag, progress))

/** Removes a staged plan that will not be committed (temps and created directories). */
export const discardStaged = (io: WriterIo, staged: Staged): void =>
  removeTempsAndDirs(io, staged.temps.values(), staged.createdDirs)

/**
 * Stage 8: renames/unlinks every step in plan order (atomic per file), then fsyncs the
 * directories. `afterRename(k)` runs after the k-th rename (fault injection). On failure
 * restores every committed step in reverse order and throws `commit_failed`. Pauses only
 * between directory fsyncs, once every file is in place: the renames run without a pause, so
 * a reader in this process sees every file before or every file after.
 */
export function* committingStaged(io: WriterIo, staged: Staged, afterRename?: (k: number) => void): Pausable<void> {
  const committed: Array<Step> = []
  const temps = new Map(staged.temps)
  let current: Step | undefined
  let renames = 0
  try {
    for (const step of staged.steps) {
      current = step
      const temp = temps.get(step)
      if (temp === undefined) io.unlinkSync(step.absolute)
      else {
        io.renameSync(temp, step.absolute)
        temps.delete(step)
      }
      committed.push(step)
      renames++
      afterRename?.(renames)
    }
  } catch (error) {
    const unrestored: Array<string> = []
    for (const step of [...committed].reverse()) {
      try {
        restore(io, step)
      } catch {
        unrestored.push(step.path)
      }
    }
    removeTempsAndDirs(io, temps.values(), staged.createdDirs)
    const failedPath = current?.path
    // A step without staged content removes its file: say "Deleting", not "Writing".
    const verb = current !== undefined && current.after === undefined ? "Deleting" : "Writing"
    throw new EngineError({
      code: "commit_failed",
      stage: Stage.commit,
      paths: [...new Set([...(failedPath === undefined ? [] : [failedPath]), ...unrestored])],
      message: unrestored.length === 0
        ? `${verb} ${failedPath === undefined ? "the plan" : `'${failedPath}'`} failed (${describeSystemError(error)}); every file was restored and the workspace is unchanged. ${retryAdvice(error)}`
        : `${verb} '${failedPath}' failed (${describeSystemError(error)}) and restoring ${unrestored.map((p) => `'${p}'`).join(", ")} also failed; those files may hold the new content. Inspect them before retrying.`,
      cause: error
    })
  }
  const dirs = new Set<string>()
  for (const step of staged.steps) dirs.add(path.dirname(step.absolute))
  for (const dir of staged.createdDirs) dirs.add(path.dirname(dir))
  for (const dir of dirs) {
    fsyncDirectory(io, dir)
    yield
  }
}

/** `committingStaged` at once, without pausing. */
export const commitStaged = (io: WriterIo, staged: Staged, afterRename?: (k: number) => void): void =>
  runNow(committingStaged(io, staged, afterRename))

/**
 * Stages and commits `plan` all-or-nothing without a journal (tests and tools); the engine
 * journals between the two steps.
 */
export const writePlan = (
  plan: Plan,
  targets: ReadonlyMap<string, ResolvedTarget>,
  io: WriterIo = nodeFs
): void => commitStaged(io, stageSteps(io, stepsOf(plan, targets), randomBytes(6).toString("hex")))
