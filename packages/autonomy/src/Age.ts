/**
 * Ages as people write them in flags, variables and the config file (`30m`, `24h`, `7d`): the
 * one parser for them (the gate's `maxEvidenceAge`, `forkjoin gc --older-than`) and a short
 * rendering of an age for messages (`8d 3h`).
 *
 * Does not own what an age limits or which flag it came from: callers put the setting's name
 * in front of the reason a text is refused.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Result from "effect/Result"

const UNITS: ReadonlyArray<readonly [string, number]> = [["d", 86_400], ["h", 3_600], ["m", 60], ["s", 1]]

const UNIT_MILLIS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/**
 * Parses an age: a whole number then `s`, `m`, `h` or `d`. The failure is the reason, without
 * the setting's name (`'7 days' is not an age like 30m, 24h or 7d (...)`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const parse = (text: string): Result.Result<Duration.Duration, string> => {
  const m = /^(\d{1,15})([smhd])$/.exec(text)
  const millis = m === null ? Number.NaN : Number(m[1]) * UNIT_MILLIS[m[2]!]!
  return Number.isSafeInteger(millis)
    ? Result.succeed(Duration.millis(millis))
    : Result.fail(`'${text}' is not an age like 30m, 24h or 7d (a whole number followed by s, m, h or d)`)
}

/**
 * An age in milliseconds for messages: its two largest units (`8d 3h`, `45m`, `12s`, `0s`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const format = (millis: number): string => {
  const total = Math.max(0, Math.floor(millis / 1000))
  const i = UNITS.findIndex(([, seconds]) => total >= seconds)
  if (i === -1) return "0s"
  const [unit, seconds] = UNITS[i]!
  const whole = Math.floor(total / seconds)
  const next = UNITS[i + 1]
  const rest = next === undefined ? 0 : Math.floor((total - whole * seconds) / next[1])
  return next === undefined || rest === 0 ? `${whole}${unit}` : `${whole}${unit} ${rest}${next[0]}`
}
