import { describe, expect, it } from "vitest"
import { isLoopbackHost } from "../src/Loopback.ts"

describe("isLoopbackHost", () => {
  it("accepts only names of the loopback interface", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "::1", "[::1]"]) expect(isLoopbackHost(host), host).toBe(true)
  })

  it("refuses wildcard, remote and look-alike names (a hostname starting with 127. is not loopback)", () => {
    for (const host of ["0.0.0.0", "::", "192.168.1.2", "10.0.0.1", "127.0.0.1.example.com", "127.example.com", "127.0.0.256", "localhost.evil", "", "0177.0.0.1", "::ffff:10.0.0.1"]) {
      expect(isLoopbackHost(host), host).toBe(false)
    }
  })
})
