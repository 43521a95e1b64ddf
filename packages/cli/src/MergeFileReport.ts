/**
 * What `forkjoin merge-file --json` prints, as schemas: the report of a merge that wrote its
 * result and the failure of one that wrote nothing, with the methods, languages and error codes
 * they name. Kept apart from the program (`MergeFile.ts`) so the command's flags can name the
 * languages without loading the merge at start-up.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * How a result was made: by lines (diff3) or by syntax tree.
 *
 * @category models
 * @since 0.1.0
 */
export const MergeMethod = Schema.Literals(["line", "structured"])

/**
 * @category models
 * @since 0.1.0
 */
export type MergeMethod = typeof MergeMethod.Type

/**
 * The languages `--language` accepts: those the syntax-aware merge has grammars for.
 *
 * @category models
 * @since 0.1.0
 */
export const MergeLanguage = Schema.Literals(["typescript", "tsx", "javascript", "python", "json"])

/**
 * @category models
 * @since 0.1.0
 */
export type MergeLanguage = typeof MergeLanguage.Type

/**
 * The `--json` line of a merge that wrote its result: where it went, whether it is clean, how
 * many conflicts carry markers in it, how it was made and, for a structured merge, the language.
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
  language: Schema.optionalKey(MergeLanguage)
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
