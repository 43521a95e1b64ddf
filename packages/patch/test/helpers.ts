/** Small helpers for the patch core tests: in-memory trees and plan runs. */
import * as Result from "effect/Result"
import { compilePatch, type FileState, type Plan, type PlanOptions } from "../src/index.ts"
import type { EngineError } from "@forkjoin/schema/EngineError"

/** UTF-8 bytes of a string. */
export const enc = (s: string): Uint8Array => new TextEncoder().encode(s)
/** String of UTF-8 bytes (undefined stays undefined). */
export const dec = (b: Uint8Array | undefined): string | undefined => (b === undefined ? undefined : new TextDecoder("utf-8", { ignoreBOM: true }).decode(b))

/** Wraps patch body lines in the Begin/End markers. */
export const patchOf = (...body: ReadonlyArray<string>): string => ["*** Begin Patch", ...body, "*** End Patch"].join("\n")

/** Plans `patch` against a tree of string (or byte) files; directories are keys ending with `/`. */
export const plan = (
  tree: Record<string, string | Uint8Array>,
  patch: string,
  options: Partial<PlanOptions> = {}
): Result.Result<Plan, EngineError> =>
  compilePatch(
    patch,
    (p): FileState => {
      const v = tree[p]
      if (v !== undefined) return { _tag: "File", bytes: typeof v === "string" ? enc(v) : v }
      if (tree[`${p}/`] !== undefined) return { _tag: "Directory" }
      return { _tag: "Missing" }
    },
    { profile: "native", allowOverwrite: false, ...options }
  )

/** The plan, or a thrown assertion error with the engine error's message. */
export const ok = (r: Result.Result<Plan, EngineError>): Plan => {
  if (Result.isFailure(r)) throw new Error(`expected a plan, got ${r.failure.code}: ${r.failure.message}`)
  return r.success
}

/** The engine error, or a thrown assertion error. */
export const err = (r: Result.Result<Plan, EngineError>): EngineError => {
  if (Result.isSuccess(r)) throw new Error(`expected an error, got a plan of ${r.success.files.length} files`)
  return r.failure
}

/** New text of `path` in a plan. */
export const after = (p: Plan, path: string): string | undefined => dec(p.files.find((f) => f.path === path)?.after)
