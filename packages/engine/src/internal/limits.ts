/**
 * Engine stage 1 (limits): the size of a request's shape — patch bytes, number of files and
 * the size of each new content. Pure checks returning the `input_too_large` error; owns no
 * other stage and no I/O.
 */
import type { Plan } from "@forkjoin/patch"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import type { Limits } from "../Engine.ts"

/** The limits when neither the engine nor the request sets one. */
export const DEFAULT_LIMITS: Limits = { maxPatchBytes: 64 * 1024 * 1024, maxFiles: 10_000, maxFileBytes: 256 * 1024 * 1024 }

/** The effective limits: request overrides engine overrides defaults. */
export const limitsOf = (engine: Partial<Limits> | undefined, request: Partial<Limits> | undefined): Limits => ({
  ...DEFAULT_LIMITS,
  ...engine,
  ...request
})

/** Refuses a patch text larger than `maxPatchBytes` (UTF-8 bytes). */
export const checkPatchSize = (patch: string, limits: Limits): EngineError | undefined => {
  const size = Buffer.byteLength(patch, "utf8")
  return size > limits.maxPatchBytes
    ? new EngineError({
      code: "input_too_large",
      stage: Stage.normalize,
      paths: [],
      message: `The patch is ${size} bytes; the limit is ${limits.maxPatchBytes}. Split it into smaller patches.`
    })
    : undefined
}

/** Refuses a request touching more than `maxFiles` paths. */
export const checkFileCount = (rels: ReadonlyArray<string>, limits: Limits): EngineError | undefined =>
  rels.length > limits.maxFiles
    ? new EngineError({
      code: "input_too_large",
      stage: Stage.normalize,
      paths: [],
      message: `The request touches ${rels.length} files; the limit is ${limits.maxFiles}. Split it into smaller requests.`
    })
    : undefined

/** Refuses a plan whose new content of some file exceeds `maxFileBytes` (first such file). */
export const checkFileSizes = (plan: Plan, limits: Limits): EngineError | undefined => {
  const f = plan.files.find((f) => f.after !== undefined && f.after.length > limits.maxFileBytes)
  return f === undefined || f.after === undefined
    ? undefined
    : new EngineError({
      code: "input_too_large",
      stage: Stage.normalize,
      paths: [f.path],
      message: `'${f.path}' would be ${f.after.length} bytes; the per-file limit is ${limits.maxFileBytes}.`
    })
}
