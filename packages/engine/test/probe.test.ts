/** The filesystem probe: case folding and the umask's new-file mode, leaving nothing behind. */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { probeFilesystem } from "../src/internal/probe.ts"
import { makeWorkspace, removeSandboxes } from "./helpers.ts"

afterAll(removeSandboxes)

describe("probeFilesystem", () => {
  it("reports the umask's mode for a new file and removes its probe", () => {
    const dir = makeWorkspace()
    const facts = probeFilesystem(dir)
    const umask = process.umask()
    expect(facts.newFileMode).toBe(0o666 & ~umask)
    expect(typeof facts.caseInsensitive).toBe("boolean")
    expect(fs.readdirSync(dir)).toEqual([])
  })

  it("falls back to the defaults when the directory cannot be written", () => {
    expect(probeFilesystem(path.join(makeWorkspace(), "missing", "dir"))).toEqual({ caseInsensitive: false, newFileMode: 0o644 })
  })
})
