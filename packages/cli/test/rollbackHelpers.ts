/**
 * For the reverse-merge rollback tests: a ten-line file, one of its lines replaced, and a
 * patch applied through the built CLI (its transaction id, what `forkjoin rollback` takes).
 */
import { expect } from "vitest"
import { patch, runCli } from "./helpers.ts"

/** The ten-line file the rollback tests edit. */
export const TEN = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"

/** `text` with its 1-based line `line` replaced by `to`. */
export const at = (text: string, line: number, to: string): string => text.split("\n").map((l, i) => (i === line - 1 ? to : l)).join("\n")

/** Applies `body` as one patch in `ws`; its transaction id. */
export const apply = (ws: string, ...body: ReadonlyArray<string>): string => {
  const out = runCli(["apply", "-", "--workspace", ws, "--json"], { stdin: patch(...body) })
  expect(out.status, out.stderr).toBe(0)
  return JSON.parse(out.stdout).record.transactionId
}
