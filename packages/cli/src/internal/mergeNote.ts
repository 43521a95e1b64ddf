/**
 * How a join merged a path, in text output (`forkjoin history diff`, `forkjoin run`): the
 * method, and the language a merge by syntax tree parsed. A structured merge always says so.
 */
import type { ChangeMerge } from "@forkjoin/schema/PatchHistoryRecord"

/** `(line)`, `(structured, typescript)`. */
export const methodNote = (merge: ChangeMerge): string => `(${merge.method}${merge.language === undefined ? "" : `, ${merge.language}`})`

/** `merged (line)`, `merged (structured, typescript)`. */
export const mergedNote = (merge: ChangeMerge): string => `merged ${methodNote(merge)}`
