/**
 * Colour for the human outputs (apply's A/M/D letters, run's status column, `error[...]`): a
 * palette of ANSI styles, and the one rule for when a stream gets it. `NO_COLOR` (any
 * non-empty value) turns it off; `FORCE_COLOR` (non-empty, not `0`/`false`) turns it on for
 * a pipe; otherwise only a terminal, never `TERM=dumb`. It does not own what is coloured
 * (each renderer takes a palette, `plain` by default) nor `--json`, which never calls it.
 *
 * @since 0.1.0
 */

/**
 * Styles a renderer applies; each wraps its text (or returns it as is, `plain`).
 *
 * @category models
 * @since 0.1.0
 */
export interface Palette {
  readonly enabled: boolean
  readonly red: (text: string) => string
  readonly green: (text: string) => string
  readonly yellow: (text: string) => string
  readonly bold: (text: string) => string
}

const identity = (text: string): string => text
const sgr = (open: number, close: number) => (text: string): string => `\x1b[${open}m${text}\x1b[${close}m`

/**
 * No colour: every style returns its text unchanged.
 *
 * @category constructors
 * @since 0.1.0
 */
export const plain: Palette = { enabled: false, red: identity, green: identity, yellow: identity, bold: identity }

/**
 * ANSI colour (SGR codes; each style resets only what it set).
 *
 * @category constructors
 * @since 0.1.0
 */
export const ansi: Palette = { enabled: true, red: sgr(31, 39), green: sgr(32, 39), yellow: sgr(33, 39), bold: sgr(1, 22) }

/**
 * Whether output to `stream` gets colour under `env` (the rule in the module comment).
 *
 * @category guards
 * @since 0.1.0
 */
export const colourEnabled = (
  stream: { readonly isTTY?: boolean | undefined },
  env: Readonly<Record<string, string | undefined>> = process.env
): boolean => {
  if ((env["NO_COLOR"] ?? "") !== "") return false
  const force = env["FORCE_COLOR"] ?? ""
  if (force !== "") return force !== "0" && force !== "false"
  return stream.isTTY === true && env["TERM"] !== "dumb"
}

/**
 * The palette for output written to `stream`: `ansi` when `colourEnabled`, else `plain`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const paletteFor = (
  stream: { readonly isTTY?: boolean | undefined },
  env: Readonly<Record<string, string | undefined>> = process.env
): Palette => (colourEnabled(stream, env) ? ansi : plain)

/**
 * The palette for this process's stdout.
 *
 * @category constructors
 * @since 0.1.0
 */
export const forStdout = (): Palette => paletteFor(process.stdout)

/**
 * The palette for this process's stderr.
 *
 * @category constructors
 * @since 0.1.0
 */
export const forStderr = (): Palette => paletteFor(process.stderr)
