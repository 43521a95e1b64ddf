/**
 * The content-addressed description of one file version (SPEC §4.2): its hash, size, text
 * encoding, line-ending style, final-newline state and permission bits. A snapshot says what
 * the bytes are; the bytes themselves live once per hash in the blob store.
 *
 * Owns the shape only. Computing a snapshot from bytes (hashing, encoding and line-ending
 * detection) belongs to the engine.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Sha256Hash } from "./Ids.ts"

/**
 * `utf8` (valid UTF-8, no BOM), `utf8-bom` (valid UTF-8 after a leading BOM) or `binary`
 * (anything else; patches refuse to update it, changesets may replace it whole).
 *
 * @category models
 * @since 0.1.0
 */
export const Encoding = Schema.Literals(["utf8", "utf8-bom", "binary"])

/**
 * @category models
 * @since 0.1.0
 */
export type Encoding = typeof Encoding.Type

/**
 * `lf`, `crlf`, `mixed` (both occur) or `none` (no line break at all, e.g. empty, one line
 * without a newline, or binary).
 *
 * @category models
 * @since 0.1.0
 */
export const LineEnding = Schema.Literals(["lf", "crlf", "mixed", "none"])

/**
 * @category models
 * @since 0.1.0
 */
export type LineEnding = typeof LineEnding.Type

/**
 * Permission bits of a regular file, `0`–`0o7777` (`stat.mode & 0o7777`; the file-type bits
 * are dropped because a snapshot always describes a regular file).
 *
 * @category models
 * @since 0.1.0
 */
export const FileMode = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 0o7777 }))

/**
 * @category models
 * @since 0.1.0
 */
export type FileMode = typeof FileMode.Type

/**
 * One file version: `hash` of the exact bytes, `bytes` (size), `encoding`, `lineEnding`,
 * `finalNewline` (the content ends with a line break) and `mode`.
 *
 * @category models
 * @since 0.1.0
 */
export const Snapshot = Schema.Struct({
  hash: Sha256Hash,
  bytes: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  encoding: Encoding,
  lineEnding: LineEnding,
  finalNewline: Schema.Boolean,
  mode: FileMode
})

/**
 * @category models
 * @since 0.1.0
 */
export type Snapshot = typeof Snapshot.Type

/**
 * The JSON form of a `Snapshot` (same shape, unbranded strings).
 *
 * @category models
 * @since 0.1.0
 */
export type SnapshotEncoded = typeof Snapshot.Encoded
