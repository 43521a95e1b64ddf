/**
 * `forkjoin serve`: starts the gateway (`@forkjoin/gateway`) on a workspace and keeps it running
 * until the process is interrupted (Ctrl-C, SIGTERM), which closes the server and the database.
 * The first stdout line is `forkjoin serve: listening on http://HOST:PORT` (with `--json`,
 * `{"url": ...}`); with `--open-url`, a one-time login URL follows. The startup repair the
 * engine ran is announced on stderr. The flags are in `ServeCommand.ts`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { configuredCluster, runnersOf } from "./internal/clusterRunners.ts"
import { fromHistoryOpen, UsageError } from "./internal/errors.ts"
import { writeStdout, writeStderr } from "./internal/output.ts"
import { ensureStateFolder, historyDbOf, resolveWorkspace } from "./internal/workspace.ts"
import { renderNotice } from "./Repair.ts"

/**
 * What `serve` is asked to do.
 *
 * @category models
 * @since 0.1.0
 */
export interface ServeRequest {
  readonly workspace: string
  readonly db?: string | undefined
  readonly host: string
  readonly port: number
  readonly allowRemote: boolean
  /** More names the Host header may give (`--host-name`). */
  readonly hostNames: ReadonlyArray<string>
  /** Mint a one-time login URL for this thread (`--open-url`). */
  readonly loginThread?: string | undefined
  readonly json: boolean
  /** The cluster whose runners `GET /v1/cluster` lists (default: the configuration's). */
  readonly cluster?: string | undefined
}

/**
 * Serves until interrupted.
 *
 * @category constructors
 * @since 0.1.0
 */
export const serve = Effect.fn("Serve.serve")(function*(request: ServeRequest) {
  const root = yield* resolveWorkspace(request.workspace)
  yield* ensureStateFolder(root)
  // Loaded here only: the CLI's other commands never pay for the HTTP stack.
  const Gateway = yield* Effect.promise(() => import("@forkjoin/gateway/Gateway"))
  const cluster = request.cluster ?? (yield* configuredCluster(root))
  yield* Effect.scoped(Effect.gen(function*() {
    const running = yield* Gateway.serve({
      root,
      db: request.db,
      host: request.host,
      port: request.port,
      allowRemote: request.allowRemote,
      hostNames: request.hostNames,
      loginThread: request.loginThread,
      ...(cluster === undefined || cluster === "none" ? {} : { cluster: runnersOf(cluster, process.cwd()) })
    }).pipe(
      Effect.catchTags({
        GatewayError: (e) => Effect.fail(new UsageError({ message: `forkjoin serve: ${e.message}`, cause: e })),
        StoreError: (e) => Effect.fail(fromHistoryOpen(e, historyDbOf(root, request.db))),
        TokenStoreError: (e) => Effect.fail(new UsageError({ message: `forkjoin serve: the token table cannot be opened: ${e.message}`, cause: e }))
      })
    )
    if (running.repairs.length > 0) yield* writeStderr(renderNotice(running.repairs, root, request.db))
    yield* writeStdout(
      request.json
        ? JSON.stringify({ url: running.url, ...(running.loginUrl === undefined ? {} : { loginUrl: running.loginUrl }) }) + "\n"
        : `forkjoin serve: listening on ${running.url}\n` +
          (running.loginUrl === undefined ? "" : `forkjoin serve: open ${running.loginUrl} (one-time login link)\n`)
    )
    return yield* Effect.never
  }))
})
