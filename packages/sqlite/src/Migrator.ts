/**
 * The one migrator of every database forkjoin keeps: each component (the history tables, the
 * merge runs, the gateway tokens, …) brings its numbered migrations, and its version is a row
 * of ONE table, `schema_components(component, version)`. Bringing a component up runs each
 * missing migration in its own `BEGIN IMMEDIATE` transaction that re-reads the version under
 * the write lock, so processes opening one file at once migrate it once, and a process killed
 * midway leaves whole steps done. A version newer than the component's code is refused,
 * untouched.
 *
 * Existing databases migrate in place: the history tables were versioned by
 * `PRAGMA user_version` before this table held them, so a component marked `userVersion`
 * reads the higher of its row and `user_version` as its version, and keeps `user_version`
 * equal to it, so a release that still reads only `user_version` refuses a newer file too.
 *
 * It owns `schema_components` and the order of steps. It does not own any component's tables
 * (each migration's `up` does) nor the connection (`Sqlite`).
 *
 * @since 0.1.0
 */
import type { Connection } from "./Sqlite.ts"
import { SqliteError } from "./SqliteError.ts"

/**
 * One schema step of a component: versions are `1..n` in order; `up` runs inside its own
 * transaction and only creates or changes what is new.
 *
 * @category models
 * @since 0.1.0
 */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly up: (connection: Connection) => void
}

/**
 * A versioned part of a database: its row in `schema_components` (`name`), how a refusal
 * names its version (`label`, e.g. "merge schema"), and its migrations. `userVersion`: the
 * component was versioned by `PRAGMA user_version` before (the history tables) and keeps it.
 *
 * @category models
 * @since 0.1.0
 */
export interface Component {
  readonly name: string
  readonly label: string
  readonly migrations: ReadonlyArray<Migration>
  readonly userVersion?: boolean
}

/**
 * A component, its migrations checked to be numbered `1..n` in order.
 *
 * @category constructors
 * @since 0.1.0
 */
export const component = (definition: Component): Component => {
  definition.migrations.forEach((m, i) => {
    if (m.version !== i + 1) {
      throw new Error(`the ${definition.name} migrations must be numbered 1..n in order; #${i} is ${m.version}`)
    }
  })
  return definition
}

const SQL = {
  hasComponents: "SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = 'schema_components'",
  createComponents: "CREATE TABLE IF NOT EXISTS schema_components (component TEXT PRIMARY KEY, version INTEGER NOT NULL)",
  componentVersion: "SELECT version FROM schema_components WHERE component = ?",
  setComponentVersion: "INSERT INTO schema_components (component, version) VALUES (?, ?) " +
    "ON CONFLICT (component) DO UPDATE SET version = excluded.version",
  userVersion: "PRAGMA user_version"
} as const

/** What the file says of `component`: its version, and whether every place that records it agrees. */
const stateOf = (c: Connection, component: Component): { readonly version: number; readonly recorded: boolean } => {
  const row = c.get(SQL.hasComponents) === undefined
    ? undefined
    : c.get<{ readonly version: number }>(SQL.componentVersion, component.name)?.version
  const legacy = component.userVersion === true ? c.get<{ readonly user_version: number }>(SQL.userVersion)!.user_version : undefined
  const version = Math.max(row ?? 0, legacy ?? 0)
  return { version, recorded: row === version && (legacy === undefined || legacy === version) }
}

const record = (c: Connection, component: Component, version: number): void => {
  c.exec(SQL.createComponents)
  c.run(SQL.setComponentVersion, component.name, version)
  if (component.userVersion === true) c.exec(`PRAGMA user_version = ${version}`)
}

/**
 * Brings `component` to its latest version on `c` (synchronously; `transaction` runs a body in
 * `BEGIN IMMEDIATE`): a read when it is current, else one transaction per missing step. Throws
 * `SqliteError` `Schema` for a version newer than the code, before writing anything.
 *
 * @category constructors
 * @since 0.1.0
 */
export const migrateSync = (
  operation: string,
  file: string,
  c: Connection,
  transaction: (body: (c: Connection) => void) => void,
  component: Component
): number => {
  const latest = component.migrations.length
  const checked = (state: ReturnType<typeof stateOf>) => {
    if (state.version > latest) {
      throw new SqliteError({
        operation,
        reason: "Schema",
        detail: `${file} has ${component.label} version ${state.version}, newer than this forkjoin supports (${latest}); ` +
          "upgrade forkjoin or use another database"
      })
    }
    return state
  }
  const found = checked(stateOf(c, component))
  if (found.version === latest && found.recorded) return latest
  // A step per missing migration; none when only the record is behind (a file of a release
  // that kept the version elsewhere): then one transaction writes it.
  const steps = component.migrations.filter((m) => m.version > found.version)
  for (const step of steps.length === 0 ? [undefined] : steps) {
    transaction((c) => {
      // Re-read under the write lock: another process may have migrated meanwhile.
      const now = checked(stateOf(c, component))
      if (step === undefined || now.version >= step.version) {
        if (!now.recorded) record(c, component, now.version)
        return
      }
      step.up(c)
      record(c, component, step.version)
    })
  }
  return latest
}
