/**
 * The engine's one filesystem probe at open: a single probe file tells whether the workspace
 * filesystem folds letter case and which mode a new file gets under this process's umask.
 */
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

/** What the probe found; an unwritable directory gives the conservative defaults. */
export interface FilesystemFacts {
  readonly caseInsensitive: boolean
  readonly newFileMode: number
}

/** Probes the filesystem of `dir` with one temporary file. */
export const probeFilesystem = (dir: string): FilesystemFacts => {
  const probe = path.join(dir, `.fj-probe-${randomUUID()}`)
  try {
    fs.writeFileSync(probe, "", { mode: 0o666 })
    return {
      caseInsensitive: fs.existsSync(path.join(dir, path.basename(probe).toUpperCase())),
      newFileMode: fs.statSync(probe).mode & 0o7777
    }
  } catch {
    return { caseInsensitive: false, newFileMode: 0o644 }
  } finally {
    fs.rmSync(probe, { force: true })
  }
}
