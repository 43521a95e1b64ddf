/**
 * Where a cluster run's durable join keeps its state (`JoinWorkflow`), without loading the
 * workflow engine: `forkjoin run --resume` asks this first, and loads the engine only for a run
 * that has the file.
 *
 * @since 0.1.0
 */
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * The file holding a run's workflow state, in its run folder.
 *
 * @category constructors
 * @since 0.1.0
 */
export const stateFile = (runDirectory: string): string => path.join(runDirectory, "join.db")

/**
 * Whether the run in `runDirectory` was joined through the workflow (its resume must be too).
 *
 * @category constructors
 * @since 0.1.0
 */
export const isDurable = (runDirectory: string): boolean => fs.existsSync(stateFile(runDirectory))
