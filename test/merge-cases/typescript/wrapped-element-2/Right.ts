import type { Line } from "./Line.ts"
import { Money } from "../money/Money.ts"

const currency = "EUR"

function subtotal(lines: ReadonlyArray<Line>): Money {
  let total = Money.zero(currency)
  for (const line of lines) total = total.add(line.price.times(line.quantity))
  return total
}

export function describe(lines: ReadonlyArray<Line>): string {
  return `${lines.length} line(s), ${subtotal(lines).format()}`
}
