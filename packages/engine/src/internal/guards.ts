/**
 * Engine stage 2 (version guards): a request may pin paths to the content hash it last saw
 * (`sha256:<hex>`, `null` for absent). Pure checks of the guards' form and, after
 * resolution, of the live state; `version_guard_failed` otherwise. Owns no resolution.
 */
import type { FileState } from "@forkjoin/patch"
import { sha256 } from "@forkjoin/patch/Bytes"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"

/** A request's guards as `[path, expected hash or null]`, in the order given. */
export type Guards = ReadonlyArray<readonly [string, string | null]>

/** The guards of a request's `expect` map. */
export const guardsOf = (expect: Readonly<Record<string, string | null>> | undefined): Guards => Object.entries(expect ?? {})

/** Refuses the first guard that is neither `sha256:<64 lowercase hex>` nor `null`. */
export const checkGuardForm = (guards: Guards): EngineError | undefined => {
  for (const [p, h] of guards) {
    if (h !== null && !/^sha256:[0-9a-f]{64}$/.test(h)) {
      return new EngineError({
        code: "version_guard_failed",
        stage: Stage.parse,
        paths: [p],
        message: `Version guard for '${p}' is not 'sha256:<64 hex>' or null; send the hash forkjoin reported for the file.`
      })
    }
  }
  return undefined
}

/** Refuses the first guarded path whose live state (resolved at stage 3) is not the expected one. */
export const checkGuards = (guards: Guards, files: ReadonlyMap<string, FileState>): EngineError | undefined => {
  for (const [p, h] of guards) {
    const s = files.get(p)
    const live = s?._tag === "File" ? sha256(s.bytes) : null
    if (live !== h) {
      // A link or a directory has no content hash (so only a hash guard fails on it), but it
      // is not absent either: say what is there.
      const expected = h ?? "absent"
      const found = s?._tag === "Directory" || s?._tag === "Other"
        ? `'${p}' is ${s._tag === "Directory" ? "a directory" : s.description}, not a regular file at the expected ${expected}`
        : `'${p}' is ${live === null ? "absent" : `at ${live}`}, not at the expected ${expected}`
      return new EngineError({
        code: "version_guard_failed",
        stage: Stage.parse,
        paths: [p],
        message: `${found}; re-read the file and rebuild the patch.`
      })
    }
  }
  return undefined
}
