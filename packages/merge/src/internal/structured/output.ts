/**
 * The merged text being written: its pieces (the sides' own text, conflicts as three texts),
 * each emitted child with the layout before it from the side it comes from, commas regenerated
 * between the elements of a comma-separated list. Pure.
 */
import type { Item } from "./items.ts"

/** A region both sides changed differently: each side's text of it, from the line's start. */
export interface ConflictPiece {
  ours: string
  base: string
  theirs: string
}

/** A piece of the merged text. */
export type Piece = string | ConflictPiece

/** The three-way merge of a piece of layout: theirs when ours kept base's, else ours. */
export const merge3 = (base: string, ours: string, theirs: string): string => ours === base ? theirs : ours

const lastNewline = (gap: string): number => gap.lastIndexOf("\n")

/** One side's text of a conflicting region, from its line's start, commas between its elements. */
const joined = (items: ReadonlyArray<Item>): string => {
  if (items.length === 0) return ""
  const first = items[0]!
  let text = first.gap.slice(lastNewline(first.gap) + 1) + first.text
  let element = first.element
  for (let i = 1; i < items.length; i++) {
    const item = items[i]!
    if (item.element && element) text += ","
    // A comment between two elements does not end the run: the comma goes before it too.
    if (item.element) element = true
    else if (item.node.type !== "comment") element = false
    text += item.gap + item.text
  }
  return text
}

/**
 * The merged list being written: pieces, with a comma put between two elements of a
 * comma-separated list (after a conflict, on each side of it that has text).
 */
export class Output {
  readonly pieces: Array<Piece> = []
  private element = false
  private afterElement = -1

  constructor(private readonly comment: ReadonlySet<string>) {}

  put(gap: string, body: ReadonlyArray<Piece>, item: Item): void {
    if (item.element && this.element) this.comma(this.pieces.length)
    this.pieces.push(gap, ...body)
    if (item.element) {
      this.element = true
      this.afterElement = this.pieces.length
    } else if (!this.comment.has(item.node.type)) this.element = false
  }

  items(items: ReadonlyArray<Item>): void {
    for (const item of items) this.put(item.gap, [item.text], item)
  }

  /**
   * A conflict over whole lines: written when the layout before the region ends a line (that a
   * line also ends after it is checked once the whole text is assembled).
   */
  conflict(lead: string, base: ReadonlyArray<Item>, ours: ReadonlyArray<Item>, theirs: ReadonlyArray<Item>): boolean {
    const at = lastNewline(lead)
    if (at === -1) return false
    const element = [...base, ...ours, ...theirs].some((i) => i.element)
    if (element && this.element) this.comma(this.pieces.length)
    this.pieces.push(lead.slice(0, at + 1), { ours: joined(ours), base: joined(base), theirs: joined(theirs) })
    if (element) {
      this.element = true
      this.afterElement = this.pieces.length
    }
    return true
  }

  /** Text after a conflict on its last line (`;`) joins each side of it; false when there is none. */
  extend(gap: string, text: string): boolean {
    const last = this.pieces[this.pieces.length - 1]
    if (last === undefined || typeof last === "string" || gap.includes("\n")) return false
    last.ours += gap + text
    last.base += gap + text
    last.theirs += gap + text
    return true
  }

  /** The trailing comma after the last element. */
  trailingComma(): void {
    if (this.afterElement !== -1) this.comma(this.afterElement)
  }

  private comma(at: number): void {
    const before = this.pieces[at - 1]
    if (before !== undefined && typeof before !== "string") {
      if (before.ours !== "") before.ours += ","
      if (before.base !== "") before.base += ","
      if (before.theirs !== "") before.theirs += ","
    } else {
      this.pieces.splice(at, 0, ",")
      if (this.afterElement >= at) this.afterElement++
    }
  }
}
