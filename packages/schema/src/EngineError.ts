/**
 * The one error every engine stage (and the pure patch core beneath it) reports. It is a
 * schema, so the CLI's `--json` error body and the library's rejection are its encoding.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { EngineErrorCode, Stage, StageNumber } from "./ErrorCode.ts"

/**
 * A rejected request: stable `code`, the engine `stage` (1..10), the relative `paths`
 * involved and an actionable `message`. Optional details help models fix the input.
 *
 * @category errors
 * @since 0.1.0
 */
export class EngineError extends Schema.TaggedError<EngineError>()("EngineError", {
  code: EngineErrorCode,
  stage: StageNumber,
  paths: Schema.Array(Schema.String),
  message: Schema.String,
  /** 1-based line of the patch text, for `patch_syntax`. */
  line: Schema.optional(Schema.Number),
  /** 1-based file lines where an ambiguous chunk matched, for `ambiguous_context`. */
  candidates: Schema.optional(Schema.Array(Schema.Number)),
  /** The underlying failure (a system error, a database error), kept for logs; never on the wire. */
  cause: Schema.optional(Schema.Defect())
}) {}

/**
 * The name of an engine stage (`Stage`'s keys: `normalize`, `parse`, `resolve`, ...), which
 * human output and the `stageName` of an error body use.
 *
 * @category models
 * @since 0.1.0
 */
export const StageName = Schema.Literals([
  "normalize",
  "parse",
  "resolve",
  "authorize",
  "plan",
  "lock",
  "stage",
  "commit",
  "persist",
  "publish"
] as const satisfies ReadonlyArray<keyof typeof Stage>)

/**
 * @category models
 * @since 0.1.0
 */
export type StageName = typeof StageName.Type

/**
 * The name of stage number `stage` (`5` → `"plan"`), read from `Stage`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const stageNameOf = (stage: StageNumber): StageName =>
  // Every stage number has a name (the CLI tests check all ten); the fallback is never taken.
  StageName.literals.find((name) => Stage[name] === stage) ?? "normalize"

/**
 * The JSON shape of an error on the CLI and over HTTP
 * (`{"code","stage","stageName","paths","message",...}`): `stage` stays the number, and
 * `stageName` names it. `stageName` is optional when decoding so bodies written before it
 * existed still decode; `toBody` always sets it.
 *
 * @category models
 * @since 0.1.0
 */
export const EngineErrorBody = Schema.Struct({
  code: EngineErrorCode,
  stage: StageNumber,
  stageName: Schema.optional(StageName),
  paths: Schema.Array(Schema.String),
  message: Schema.String,
  line: Schema.optional(Schema.Number),
  candidates: Schema.optional(Schema.Array(Schema.Number))
})

/**
 * @category models
 * @since 0.1.0
 */
export type EngineErrorBody = typeof EngineErrorBody.Type

/**
 * Projects an error onto its wire body (drops the tag, the stack and the cause; adds the
 * stage's name).
 *
 * @category combinators
 * @since 0.1.0
 */
export const toBody = (e: EngineError): EngineErrorBody => ({
  code: e.code,
  stage: e.stage,
  stageName: stageNameOf(e.stage),
  paths: e.paths,
  message: e.message,
  ...(e.line === undefined ? {} : { line: e.line }),
  ...(e.candidates === undefined ? {} : { candidates: e.candidates })
})
