/**
 * A readable excerpt of a rendered conflict: the marker regions with a few lines of context
 * around them, the rest elided (a conflict's text is the whole file).
 */

// A marker line whatever its label: older records say `ours`/`base`/`theirs`, joins now
// `workspace`/`baseline`/<task-id>, and library callers choose their own.
const MARKER = /^(<<<<<<<|\|\|\|\|\|\|\||=======|>>>>>>>)( |$)/

/** The lines of `text` within `context` lines of a conflict region, `…` between the kept runs. */
export const conflictExcerpt = (text: string, context = 3): ReadonlyArray<string> => {
  const lines = text.replace(/\r?\n$/, "").split(/\r?\n/)
  const keep = new Array<boolean>(lines.length).fill(false)
  let inside = false
  lines.forEach((line, i) => {
    const marker = MARKER.test(line)
    if (marker && line.startsWith("<<<<<<<")) inside = true
    if (inside || marker) for (let j = Math.max(0, i - context); j <= Math.min(lines.length - 1, i + context); j++) keep[j] = true
    if (marker && line.startsWith(">>>>>>>")) inside = false
  })
  // No markers (a binary or delete conflict): the text is an explanation; show it whole.
  if (!keep.some(Boolean)) return lines
  const out: Array<string> = []
  lines.forEach((line, i) => {
    if (keep[i]) out.push(line)
    else if (keep[i - 1] === true || (i === 0 && !keep[0])) out.push("…")
  })
  return out
}
