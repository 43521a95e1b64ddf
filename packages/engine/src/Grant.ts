/**
 * What a turn may do to files (SPEC §3 stage 4): write at all, create directories, replace
 * existing files. Owns the grant model and the common grants; the checks are the engine's.
 *
 * @since 0.1.0
 */

/**
 * What a turn may do to files. Read-only is `write: false`.
 *
 * @category models
 * @since 0.1.0
 */
export interface Grant {
  readonly write: boolean
  readonly createDirs: boolean
  readonly overwrite: boolean
}

/**
 * Common grants: read-only, write, write + create-dirs (the CLI default), and everything.
 *
 * @category constructors
 * @since 0.1.0
 */
export const Grants = {
  readOnly: { write: false, createDirs: false, overwrite: false },
  write: { write: true, createDirs: false, overwrite: false },
  writeCreateDirs: { write: true, createDirs: true, overwrite: false },
  full: { write: true, createDirs: true, overwrite: true }
} as const satisfies Record<string, Grant>
