/**
 * The requests the history views answer (SPEC §4.4) and the views' configuration. Responses
 * are schemas in `@forkjoin/schema/HistoryViews`; requests are in-process arguments (the CLI
 * builds them from flags), so they are plain types, with no wire schema to derive them from;
 * `ordinalOf` reads the `#N` a person types for a record.
 *
 * It owns the request shapes. It does not own validating them (each view does, answering a
 * `ViewError`) nor the responses.
 *
 * @since 0.1.0
 */
import type { EnvironmentId } from "@forkjoin/schema"

/**
 * Paging options shared by every view: `cursor` (from a previous page's `nextCursor`),
 * `limit` (items per page, default 100, clamped to 1..1000) and `maxBytes` (encoded items
 * per response, default 1 MiB, clamped to 1 KiB..16 MiB; at least one item is always sent).
 *
 * @category models
 * @since 0.1.0
 */
export interface PageOptions {
  readonly cursor?: string | undefined
  readonly limit?: number | undefined
  readonly maxBytes?: number | undefined
  /**
   * The workspace's own user asks (the CLI without `--thread`): every thread of the
   * environment is in scope, not just the caller's. Never set for a token's caller.
   */
  readonly everyThread?: boolean | undefined
}

/**
 * A timeline request: the records of `thread` (default: the caller's; with `descendants`,
 * its descendants' too; with `everyThread` and no thread, every record) or of `turn`, in
 * commit order.
 *
 * @category models
 * @since 0.1.0
 */
export interface TimelineRequest extends PageOptions {
  readonly caller: string
  readonly thread?: string | undefined
  readonly turn?: string | undefined
  readonly descendants?: boolean | undefined
}

/**
 * A threads request: the caller's thread and its descendants (every thread with
 * `everyThread`), each with its parent and record counts, ordered by thread id.
 *
 * @category models
 * @since 0.1.0
 */
export interface ThreadsRequest extends PageOptions {
  readonly caller: string
}

/**
 * A turn-aggregate request.
 *
 * @category models
 * @since 0.1.0
 */
export interface TurnRequest extends PageOptions {
  readonly caller: string
  readonly turn: string
}

/**
 * A record-diff request naming its records by exactly one of `recordId` (a record id) or
 * `target` (what a person types: `#N` for the record with commit ordinal N, else a record id,
 * else a transaction id, whose records are shown in commit order); `maxLines` caps the diff
 * lines per response (default 2000, max 100000).
 *
 * @category models
 * @since 0.1.0
 */
export interface DiffRequest extends PageOptions {
  readonly caller: string
  readonly recordId?: string | undefined
  readonly target?: string | undefined
  readonly maxLines?: number | undefined
}

/**
 * The commit ordinal `N` of a record named as `#N` (what the timeline shows), or undefined when
 * `target` is not of that form. The one parser of `#N`: the diff view and `forkjoin rollback` use it.
 *
 * @category combinators
 * @since 0.1.0
 */
export const ordinalOf = (target: string): number | undefined => {
  const m = /^#([1-9][0-9]{0,14})$/.exec(target)
  return m === null ? undefined : Number(m[1])
}

/**
 * A file-history request: `path` is workspace-relative (an absolute path inside the
 * workspace root is accepted; `..` pops a segment, one that leaves the workspace is refused);
 * `detectGaps` (default true with a root) compares the disk with history and reports what
 * differs in the first page's coverage (`unrecordedChanges`), writing nothing.
 *
 * @category models
 * @since 0.1.0
 */
export interface FileRequest extends PageOptions {
  readonly caller: string
  readonly path: string
  readonly detectGaps?: boolean | undefined
}

/**
 * Which environment the views read, and the workspace root (needed for gap detection and
 * for accepting absolute paths).
 *
 * @category models
 * @since 0.1.0
 */
export interface ViewsConfig {
  readonly environmentId: EnvironmentId
  readonly root?: string | undefined
}
