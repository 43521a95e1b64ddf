/**
 * The pure vocabulary between the patch core and the effectful shell: the state of a file
 * as the shell read it, the options of a planning run, and the resulting plan (per file:
 * kind, old bytes, new bytes). Owns no I/O; the engine reads files and writes plans.
 *
 * @since 0.1.0
 */
import type { ChangeKind, ChangeMerge, RelativePath } from "@forkjoin/schema"

/**
 * `codex` reproduces Codex `apply_patch` outcomes (atomically); `native` is the safe default
 * (ambiguity rejection, no silent overwrite, exact line-ending/BOM/final-newline keeping).
 *
 * @category models
 * @since 0.1.0
 */
export type Profile = "codex" | "native"

/**
 * What the shell found at a normalized relative path before planning.
 *
 * @category models
 * @since 0.1.0
 */
export type FileState =
  | { readonly _tag: "File"; readonly bytes: Uint8Array }
  | { readonly _tag: "Missing" }
  | { readonly _tag: "Directory" }
  | { readonly _tag: "Other"; readonly description: string }

/**
 * Options of one planning run.
 *
 * @category models
 * @since 0.1.0
 */
export interface PlanOptions {
  readonly profile: Profile
  /** The write grant allows replacing an existing file (Add onto a file, Move onto a file). Only `native` consults it. */
  readonly allowOverwrite: boolean
  /** `codex` only: Codex's opt-in PreserveLineEndings mode (upstream fixtures 023/024). `native` always preserves. */
  readonly preserveLineEndings?: boolean
}

/**
 * The net effect on one path. `before`/`after` are `undefined` for absent files;
 * a `move` carries `moveFrom` and, when it replaced a destination, `overwritten`.
 *
 * @category models
 * @since 0.1.0
 */
export interface PlannedFile {
  readonly kind: ChangeKind
  readonly path: RelativePath
  readonly moveFrom?: RelativePath
  readonly before: Uint8Array | undefined
  readonly after: Uint8Array | undefined
  /** For a move, the destination's previous content when it existed. */
  readonly overwritten?: Uint8Array
  /** How a join merged `after` with a sibling's change; recorded on the change. */
  readonly merge?: ChangeMerge
}

/**
 * A Codex-style summary line: `A` added, `M` modified (moves list the destination), `D` deleted.
 *
 * @category models
 * @since 0.1.0
 */
export interface SummaryLine {
  readonly status: "A" | "M" | "D"
  readonly path: string
}

/**
 * The exact virtual workspace a patch produces: every touched path with its full before and
 * after bytes, in first-touch order, plus the per-operation summary in Codex's A/M/D order.
 *
 * @category models
 * @since 0.1.0
 */
export interface Plan {
  readonly files: ReadonlyArray<PlannedFile>
  readonly summary: ReadonlyArray<SummaryLine>
}
