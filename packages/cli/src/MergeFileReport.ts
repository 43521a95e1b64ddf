/**
 * What `forkjoin merge-file --json` prints, as schemas: the report of a merge that wrote its
 * result and the failure of one that wrote nothing, with the reasons and error codes they name.
 * Kept apart from the program (`MergeFile.ts`), which loads the merge only when it runs.
 *
 * @since 0.1.0
 */
import { Language } from "@forkjoin/merge/Syntax"
import { MergeMethod } from "@forkjoin/schema/PatchHistoryRecord"
import * as Schema from "effect/Schema"

/**
 * A clean line merge held as a conflict by its structural checks: a key or member now named
 * twice (`duplicate_member`) or a file that no longer parses (`syntax_broken`), which merging
 * by syntax could not settle either.
 *
 * @category models
 * @since 0.1.0
 */
export const HeldReason = Schema.Literals(["duplicate_member", "syntax_broken"])

/**
 * @category models
 * @since 0.1.0
 */
export type HeldReason = typeof HeldReason.Type

/**
 * The `--json` line of a merge that wrote its result: where it went, whether it is clean, how
 * many conflicts it has, how it was made and, for a structured merge, the language. A result
 * its structural checks held (`reason`) is the line merge without markers, one conflict.
 *
 * @category models
 * @since 0.1.0
 */
export const MergeFileReport = Schema.Struct({
  ok: Schema.Literal(true),
  path: Schema.String,
  clean: Schema.Boolean,
  conflicts: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  method: MergeMethod,
  language: Schema.optionalKey(Language),
  reason: Schema.optionalKey(HeldReason)
})

/**
 * @category models
 * @since 0.1.0
 */
export type MergeFileReport = typeof MergeFileReport.Type

/**
 * Why a merge wrote nothing: an input that is missing, a directory or unreadable (a named pipe,
 * socket or device included), an output that cannot be one, both sides changed a binary file,
 * or the write itself failed.
 *
 * @category models
 * @since 0.1.0
 */
export const MergeFileErrorCode = Schema.Literals([
  "input_missing",
  "input_is_directory",
  "input_unreadable",
  "output_invalid",
  "binary_file",
  "write_failed"
])

/**
 * @category models
 * @since 0.1.0
 */
export type MergeFileErrorCode = typeof MergeFileErrorCode.Type

/**
 * The `--json` line of a merge that wrote nothing.
 *
 * @category models
 * @since 0.1.0
 */
export const MergeFileFailure = Schema.Struct({
  ok: Schema.Literal(false),
  error: Schema.Struct({ code: MergeFileErrorCode, paths: Schema.Array(Schema.String), message: Schema.String })
})

/**
 * @category models
 * @since 0.1.0
 */
export type MergeFileFailure = typeof MergeFileFailure.Type
