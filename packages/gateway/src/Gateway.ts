/**
 * The resident gateway (SPEC §11): one process that keeps a workspace's engine and history
 * database open and serves many clients over HTTP — the `GatewayApi` under `/v1/` behind bearer
 * tokens bound to threads, `/openapi.json`, the history page at `/`, view grants at
 * `/view/{grant}` and the live event stream at `/v1/events`. Binds loopback unless told
 * otherwise (a non-loopback host needs `allowRemote`), answers only requests whose `Host` is one
 * of its names, and keeps its absolute paths out of error bodies (`internal/boundary.ts`).
 *
 * It owns assembling the server (services over ONE history connection, handlers, routes, body
 * limit, bind address, the Host check, and the fast `POST /v1/apply` path placed in front of the
 * router). It
 * does not own the contract (`GatewayApi`), tokens (`Tokens`), grants (`ViewGrants`) nor the
 * command line (`forkjoin serve` in the CLI).
 *
 * @since 0.1.0
 */
import { isLoopbackHost } from "@forkjoin/http/Loopback"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Engine, environmentIdOf, type RepairOutcome } from "@forkjoin/engine/Engine"
import * as Workspace from "@forkjoin/engine/Workspace"
import type { StoreError } from "@forkjoin/history/HistoryStore"
import { ProviderAggregates } from "@forkjoin/history/ProviderAggregates"
import { HistoryViews } from "@forkjoin/history/Views"
import * as WorkspaceLayer from "@forkjoin/orchestrator/WorkspaceLayer"
import type { EngineError } from "@forkjoin/schema/EngineError"
import { ID_RULE, idRuleProblem } from "@forkjoin/schema/Ids"
import * as ByteSize from "effect/ByteSize"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as References from "effect/References"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { HttpApiBuilder } from "effect/http-api"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import { HttpServerRequest, MaxBodySize } from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import { type IncomingMessage, Server, type ServerResponse } from "node:http"
import * as path from "node:path"
import { Authorization, Caller, type ClusterRunners, GatewayApi, Unauthorized } from "./GatewayApi.ts"
import { toApiError } from "./internal/access.ts"
import { allowedHostNames, hostNameOf, hostRefusal, isAllowedHost, makeRedact, redactResponse, refusalResponse } from "./internal/boundary.ts"
import { type Front, makeFastApply } from "./internal/fastApply.ts"
import * as RequestProblems from "./internal/requestProblems.ts"
import { v1Handlers } from "./internal/handlers.ts"
import { extraRoutes, type LoginCodes } from "./internal/routes.ts"
import * as Tokens from "./Tokens.ts"
import { TokenStore, type TokenStoreError } from "./TokenStore.ts"
import * as TokenStoreSqlite from "./TokenStoreSqlite.ts"
import { makeGrants } from "./ViewGrants.ts"

/**
 * How to serve: the workspace `root`, its history database (default
 * `<root>/.forkjoin/history.db`), the bind `host` (default `127.0.0.1`) and `port` (default
 * 7420, `0` picks a free one), `allowRemote` for a non-loopback host, `hostNames` it also
 * answers for, the request body cap (default 64 MiB), the event stream's poll interval, and
 * `loginThread`: when set, a one-time login code for that thread is minted (`loginUrl`).
 *
 * @category models
 * @since 0.1.0
 */
export interface ServeOptions {
  readonly root: string
  readonly db?: string | undefined
  readonly host?: string | undefined
  readonly port?: number | undefined
  readonly allowRemote?: boolean | undefined
  /**
   * More names the `Host` header may give (`--host-name`), beside the bound address (and
   * `127.0.0.1`, `localhost`, `[::1]` on a loopback or every-address bind).
   */
  readonly hostNames?: ReadonlyArray<string> | undefined
  readonly maxBodyBytes?: number | undefined
  readonly pollMs?: number | undefined
  readonly loginThread?: string | undefined
  /** The lifetime of view grants (default 60 s). */
  readonly grantTtlMs?: number | undefined
  /**
   * Whether `POST /v1/apply` takes the fast path in front of the router (default `true`);
   * `false` serves it through the router only (tests compare the two).
   */
  readonly fastApply?: boolean | undefined
  /** Lists the workspace's cluster runners (`GET /v1/cluster`); none: the workspace has no cluster. */
  readonly cluster?: Effect.Effect<ClusterRunners> | undefined
}

/**
 * A running gateway: its base URL and, with `loginThread`, the one-time login URL.
 *
 * @category models
 * @since 0.1.0
 */
export interface Running {
  readonly url: string
  readonly loginUrl: string | undefined
  /** What the engine's startup repair did when the gateway opened the workspace. */
  readonly repairs: ReadonlyArray<RepairOutcome>
}

/**
 * Why the gateway did not start: a non-loopback host without `allowRemote` (`RemoteRefused`),
 * a `hostNames` entry that is not a host name (`HostName`), a `loginThread` that breaks the id
 * rule (`Thread`), the address in use or not bindable (`Bind`), or the workspace/database
 * (`Workspace`).
 *
 * @category errors
 * @since 0.1.0
 */
export class GatewayError extends Schema.TaggedError<GatewayError>()("GatewayError", {
  reason: Schema.Literals(["RemoteRefused", "HostName", "Thread", "Bind", "Workspace"]),
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

const realpathOrNone = (file: string): Array<string> => {
  try {
    return [fs.realpathSync(file)]
  } catch {
    return []
  }
}

/**
 * The default port: 7420.
 *
 * @category constructors
 * @since 0.1.0
 */
export const DEFAULT_PORT = 7420


/**
 * The services the gateway runs on, over one connection to the history database `db`: the
 * engine (startup repair runs here), the history and merge stores, the views, provider
 * ingestion and the token store.
 *
 * @category layers
 * @since 0.1.0
 */
export const servicesLayer = (root: string, db: string) => {
  const real = fs.realpathSync(root)
  const config = { environmentId: environmentIdOf(real), root: real }
  return Layer.mergeAll(
    HistoryViews.layerNoDeps(config),
    ProviderAggregates.layerNoDeps(config),
    TokenStoreSqlite.layerNoDeps
  ).pipe(Layer.provideMerge(WorkspaceLayer.layer(real, db)))
}

const authorizationLayer = Layer.effect(
  Authorization,
  Effect.map(Effect.service(TokenStore), (store) => ({
    bearer: (effect, { credential }) =>
      Tokens.authenticate(Redacted.value(credential)).pipe(
        Effect.provideService(TokenStore, store),
        Effect.catchTags({
          TokenRefused: (e) =>
            Effect.fail(new Unauthorized({ reason: e.reason, message: `${e.message}: send 'Authorization: Bearer <token>' from 'forkjoin token create'` })),
          TokenStoreError: (e) => Effect.die(toApiError(e))
        }),
        Effect.flatMap((thread) => Effect.provideService(effect, Caller, { thread }))
      )
  }) satisfies typeof Authorization.Service)
)

const makeCodes = (): LoginCodes & { readonly mint: (thread: string, now: number) => string } => {
  const codes = new Map<string, { readonly thread: string; readonly exp: number }>()
  return {
    mint: (thread, now) => {
      const code = randomBytes(18).toString("base64url")
      codes.set(code, { thread, exp: now + 10 * 60_000 })
      return code
    },
    take: (code, now) => {
      const found = codes.get(code)
      codes.delete(code)
      return found === undefined || found.exp <= now ? undefined : found.thread
    }
  }
}

const tooLarge = (limit: number) =>
  HttpServerResponse.jsonUnsafe(
    { _tag: "PayloadTooLarge", code: "body_too_large", message: `the request body is over the ${limit}-byte limit; nothing was written` },
    { status: 413 }
  )

/**
 * A node:http server whose `request` event goes first to a front handler (the fast apply path),
 * then to its listeners (the effect router) when the front does not take it. Overriding `emit`
 * keeps the router's own listener, its `checkContinue` and `upgrade` handling and its shutdown
 * as they are. The front gets only requests whose `Host` is one of the server's names
 * (`admits`); the router refuses the others.
 */
class FrontedServer extends Server {
  front: Front | undefined = undefined
  admits: (host: string | undefined) => boolean = () => false
  override emit(event: string, ...args: Array<unknown>): boolean {
    if (event === "request" && this.front !== undefined) {
      const [request, response] = args as [IncomingMessage, ServerResponse]
      if (this.admits(request.headers.host) && this.front(request, response, (q, s) => void super.emit("request", q, s))) return true
    }
    return super.emit(event, ...args)
  }
}

/**
 * Starts the gateway in the current scope and resolves to its URL once it listens; the server
 * stops when the scope closes.
 *
 * @category constructors
 * @since 0.1.0
 */
export const serve = (
  options: ServeOptions
): Effect.Effect<Running, GatewayError | EngineError | StoreError | TokenStoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const host = options.host ?? "127.0.0.1"
    if (!isLoopbackHost(host) && options.allowRemote !== true) {
      return yield* new GatewayError({
        reason: "RemoteRefused",
        message: `refusing to bind ${host}: it is not a loopback address; pass --allow-remote to serve other machines`
      })
    }
    const hostNames: Array<string> = []
    for (const given of options.hostNames ?? []) {
      const name = hostNameOf(given)
      if (name === undefined) {
        return yield* new GatewayError({
          reason: "HostName",
          message: `--host-name '${given}' is not a host name; give a DNS name or an address as clients write it in the URL ` +
            "(like gw.example.com or 10.0.0.5), without a scheme, a port or a path"
        })
      }
      hostNames.push(name)
    }
    const allowedHosts = allowedHostNames(host, isLoopbackHost(host), hostNames)
    const loginProblem = options.loginThread === undefined ? undefined : idRuleProblem(options.loginThread)
    if (loginProblem !== undefined) {
      return yield* new GatewayError({
        reason: "Thread",
        message: `--thread '${options.loginThread}' cannot have a login link (${loginProblem}); ${ID_RULE}`
      })
    }
    const root = yield* Effect.try({
      try: () => fs.realpathSync(options.root),
      catch: (cause) => new GatewayError({ reason: "Workspace", message: `workspace '${options.root}' cannot be opened`, cause })
    })
    const db = Workspace.databaseOf(root, options.db)
    const maxBody = options.maxBodyBytes ?? 64 * 1024 * 1024
    const grants = makeGrants(undefined, options.grantTtlMs)
    const codes = makeCodes()
    let baseUrl = ""
    const api = HttpApiBuilder.layer(GatewayApi, { openapiPath: "/openapi.json" }).pipe(
      Layer.provide(v1Handlers(grants, () => baseUrl, options.pollMs ?? 250, options.cluster ?? Effect.succeed({ runners: [], unhealthy: [] }))),
      Layer.provide(authorizationLayer),
      Layer.provide(RequestProblems.layer)
    )
    // Every error body the router sends, whoever wrote it, names workspace-relative paths only.
    const redaction = HttpRouter.middleware((effect) => Effect.map(effect, redactResponse(redact)), { global: true })
    const app = Layer.mergeAll(api, extraRoutes({ grants, codes }), redaction)
    const services = yield* Layer.build(servicesLayer(root, db))
    // The database exists now: its real path is known too.
    const redact = makeRedact([...new Set([root, path.resolve(options.root)])], [...new Set([path.resolve(db), ...realpathOrNone(db)])])
    const nodeServer = new FrontedServer()
    const server = HttpRouter.serve(app, {
      disableLogger: true,
      disableListenLog: true,
      // View grants travel in the path: allow them past the router's default 100-character parameter.
      routerConfig: { maxParamLength: 8192 },
      middleware: (effect) =>
        Effect.flatMap(Effect.service(HttpServerRequest), (request) => {
          // Before anything else: a page of another site that points its DNS name here gets nothing.
          const refused = hostRefusal(request.headers.host, allowedHosts)
          if (refused !== undefined) return Effect.succeed(refusalResponse(refused))
          const length = Number(request.headers["content-length"] ?? "0")
          return length > maxBody ? Effect.succeed(tooLarge(maxBody)) : effect
        })
    }).pipe(
      Layer.provide(Layer.succeedContext(services)),
      // No span per request and per handler step: nothing exports them, and they cost a third of a small request.
      Layer.provide(Layer.succeed(References.TracerEnabled, false)),
      // A chunked body has no Content-Length to refuse up front: its reading stops at the cap.
      Layer.provide(Layer.succeed(MaxBodySize, ByteSize.bytes(maxBody))),
      Layer.provideMerge(NodeHttpServer.layer(() => nodeServer, { port: options.port ?? DEFAULT_PORT, host }))
    )
    const built = yield* Layer.build(server).pipe(
      Effect.catchTag("ServeError", (cause) =>
        Effect.fail(new GatewayError({ reason: "Bind", message: `cannot listen on ${host}:${options.port ?? DEFAULT_PORT}: ${cause.message}`, cause })))
    )
    nodeServer.admits = (header) => isAllowedHost(header, allowedHosts)
    if (options.fastApply !== false) nodeServer.front = makeFastApply(services, maxBody, redact)
    const address = Context.get(built, HttpServer.HttpServer).address
    const port = address._tag === "UnixPathAddress" ? 0 : address.port
    baseUrl = `http://${host.includes(":") ? `[${host}]` : host}:${port}`
    const loginUrl = options.loginThread === undefined
      ? undefined
      : `${baseUrl}/#code=${codes.mint(options.loginThread, Date.now())}`
    return { url: baseUrl, loginUrl, repairs: Context.get(services, Engine).startupRepair.outcomes }
  })
