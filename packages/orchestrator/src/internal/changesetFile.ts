/**
 * Reading a child's `changeset.json` in its namespace (its own export, or a plan's
 * `changesetFile` staged into the run): a regular file, never a link, a named pipe or a
 * device, at most `MAX_CHANGESET_BYTES`, parsed as JSON (a syntax error says its line and
 * column). What cannot be read says why, as the child's status: nothing there is
 * `missing_changeset`, anything else `invalid_changeset`.
 */
import { readRegularFile } from "@forkjoin/patch/SafeRead"
import { describeSyntaxError, parseJson } from "@forkjoin/schema/JsonText"
import * as Result from "effect/Result"
import * as path from "node:path"

/** The largest changeset file the join reads (its content lives in blobs, so this is generous). */
export const MAX_CHANGESET_BYTES = 64 * 1024 * 1024

/** Why a child's changeset was not read: the child's status and what to do. */
export interface Unread {
  readonly status: "missing_changeset" | "invalid_changeset"
  readonly reason: string
}

/** The parsed (untrusted) `<namespace>/changeset.json`, or why it was not read. */
export const readChildChangeset = (namespace: string): Result.Result<unknown, Unread> => {
  const file = path.join(namespace, "changeset.json")
  const read = readRegularFile(file, MAX_CHANGESET_BYTES)
  if (Result.isFailure(read)) {
    return Result.fail(
      read.failure._tag === "Missing"
        ? { status: "missing_changeset", reason: "the child exported no changeset (it did not finish cleanly)" }
        : { status: "invalid_changeset", reason: `the changeset ${file} was not read: ${read.failure.detail}; it must be a regular file` }
    )
  }
  const notJson = (why: string): Result.Result<unknown, Unread> =>
    Result.fail({ status: "invalid_changeset", reason: `the changeset ${file} is not JSON (${why}); give a changeset.json a run exported` })
  let text: string
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(read.success)
  } catch (error) {
    return notJson(error instanceof Error ? error.message : String(error))
  }
  const parsed = parseJson(text)
  return parsed.ok ? Result.succeed(parsed.value) : notJson(describeSyntaxError(parsed.error))
}
