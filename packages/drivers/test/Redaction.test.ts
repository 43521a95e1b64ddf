/**
 * The redaction of secrets in provider text, attacked the way a provider (or a proxy in front
 * of it) would leak them: the key as is, inside JSON strings (escaped quotes, backslashes and
 * slashes), URL-encoded, in a header dump, as a bearer token, and in object keys; and what it
 * must leave alone (prose about bearer tokens, code naming a header, short keys).
 */
import * as Redaction from "@forkjoin/drivers/Redaction"
import { describe, expect, it } from "vitest"

const KEY = "sk-live-\"quote\\slash/3Xy9"
const r = Redaction.make([KEY, "", "short"])

describe("Redaction", () => {
  it("replaces the key as is, JSON-escaped (with and without \\/) and URL-encoded", () => {
    const json = JSON.stringify(KEY).slice(1, -1)
    for (const form of [KEY, json, json.replaceAll("/", "\\/"), encodeURIComponent(KEY)]) {
      const out = r.text(`before ${form} after`)
      expect(out).toBe(`before ${Redaction.PLACEHOLDER} after`)
    }
  })

  it("redacts a whole JSON body without breaking it", () => {
    const body = JSON.stringify({ error: { message: `Incorrect API key provided: ${KEY}` } })
    const out = r.text(body)
    expect(out).not.toContain("3Xy9")
    expect(JSON.parse(out)).toEqual({ error: { message: `Incorrect API key provided: ${Redaction.PLACEHOLDER}` } })
  })

  it("redacts bearer tokens and Authorization / x-api-key values it was not told about", () => {
    const other = "tok_9f8e7d6c5b4a39281706"
    const dump = [
      `Authorization: Bearer ${other}`,
      `authorization=Basic dXNlcjpwYXNzd29yZDEyMzQ1`,
      `{"x-api-key":"${other}"}`,
      JSON.stringify({ message: `sent {"x-api-key": "${other}"}` }),
      `curl -H 'api-key: ${other}'`,
      `the header was bearer ${other}.`
    ]
    for (const line of dump) {
      const out = r.text(line)
      expect(out, line).not.toContain("9f8e7d6c5b4a")
      expect(out, line).not.toContain("dXNlcjpwYXNzd29yZDEyMzQ1")
      expect(out, line).toContain(Redaction.PLACEHOLDER)
    }
  })

  it("leaves prose, code naming a header, and keys shorter than the minimum alone", () => {
    const kept = [
      "Bearer tokens are sent in the Authorization header.",
      "headers: { Authorization: `Bearer ${token}` }",
      "req.headers[\"x-api-key\"] = process.env.API_KEY",
      "a short secret stays",
      "internationalization is hard"
    ]
    for (const line of kept) expect(r.text(line)).toBe(line)
  })

  it("redacts every string of a value, object keys included, and returns the same value when nothing changed", () => {
    const clean = { a: ["x", { b: 1, c: null }], d: true }
    expect(r.value(clean)).toBe(clean)
    const dirty = { calls: [{ params: { patch: `+${KEY}\n` } }], [KEY]: 1 }
    const out = r.value(dirty)
    expect(JSON.stringify(out)).not.toContain("3Xy9")
    expect(out.calls[0]!.params.patch).toBe(`+${Redaction.PLACEHOLDER}\n`)
    expect(Object.keys(out)).toContain(Redaction.PLACEHOLDER)
    // The input is not modified.
    expect(dirty.calls[0]!.params.patch).toContain(KEY)
  })

  it("a key of the minimum length is replaced even where it is the whole string", () => {
    const eight = Redaction.make(["k3y-8chr"])
    expect(eight.value({ key: "k3y-8chr", list: ["k3y-8chr", "k3y-8ch"] })).toEqual({ key: Redaction.PLACEHOLDER, list: [Redaction.PLACEHOLDER, "k3y-8ch"] })
  })

  it("a longer key containing a shorter one is replaced whole", () => {
    const two = Redaction.make(["sk-abcdefgh", "sk-abcdefgh-9876543210"])
    expect(two.text("k=sk-abcdefgh-9876543210;")).toBe(`k=${Redaction.PLACEHOLDER};`)
  })
})
