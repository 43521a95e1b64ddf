/**
 * What the gateway's handlers share: the services they run on, the caller's scope check (a
 * thread is visible when the views answer for it), and the mapping of every internal failure
 * to one of the API's errors (nothing internal leaks; a store failure is 503, an unseen thing 404).
 */
import type { Engine } from "@forkjoin/engine/Engine"
import type { HistoryServices, StoreError } from "@forkjoin/history/HistoryStore"
import type { IngestError, ProviderAggregates } from "@forkjoin/history/ProviderAggregates"
import type { MergeStore } from "@forkjoin/history/MergeStore"
import type { Sqlite } from "@forkjoin/history/Sqlite"
import type { HistoryViews, ViewError } from "@forkjoin/history/Views"
import type { OrchestratorError } from "@forkjoin/orchestrator/OrchestratorError"
import * as Visibility from "@forkjoin/orchestrator/Visibility"
import type { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import { BadRequest, NotFound, Rejected, Unavailable } from "../GatewayApi.ts"
import type { TokenStore, TokenStoreError } from "../TokenStore.ts"

/** Everything a gateway handler may use. */
export type Services = Engine | HistoryServices | MergeStore | Sqlite | HistoryViews | ProviderAggregates | TokenStore

// A path the workspace policy denies is the engine's stable code, as an apply of it would be.
const ingestReason = { Malformed: "Malformed", PathRefused: "PathRefused", PathDenied: "path_denied_by_policy" } as const

/** The API error of any failure a handler meets. */
export type ApiError = NotFound | BadRequest | Rejected | Unavailable

/** Maps a store, view, engine, orchestrator or ingestion failure to the API's error. */
export const toApiError = (
  e: StoreError | ViewError | EngineError | OrchestratorError | IngestError | TokenStoreError
): ApiError => {
  switch (e._tag) {
    case "StoreError":
    case "TokenStoreError":
      return new Unavailable({ message: e.message })
    case "ViewError":
      return e.reason === "NotVisible" || e.reason === "NotFound"
        ? new NotFound({ message: e.reason === "NotFound" ? e.detail : "not found" })
        : new BadRequest({ reason: e.reason, message: e.detail })
    case "EngineError":
      return new Rejected({ code: e.code, stage: e.stage, paths: e.paths, message: e.message })
    case "OrchestratorError":
      return e.code === "unknown_conflict" || e.code === "unknown_transaction" || e.code === "unknown_run"
        ? new NotFound({ message: e.message })
        : e.code === "store_unavailable"
        ? new Unavailable({ message: e.message })
        : new Rejected({ code: e.code, paths: e.paths, message: e.message })
    case "IngestError":
      return e.reason === "NotFound" || e.reason === "NotAggregate"
        ? new NotFound({ message: e.detail })
        : e.reason === "Conflict"
        ? new Rejected({ code: "provider_event_conflict", paths: [], message: e.detail })
        : new BadRequest({ reason: ingestReason[e.reason], message: e.detail })
  }
}

/** Whether `caller` sees `thread` (itself or a thread registered below it): `Visibility.sees`. */
export const sees = (caller: string, thread: string): Effect.Effect<boolean, Unavailable, HistoryViews> =>
  Visibility.sees(caller, thread).pipe(Effect.mapError((e) => new Unavailable({ message: e.message })))

/** Fails with `NotFound` unless `caller` sees `thread`. */
export const requireSees = (caller: string, thread: string, what: string): Effect.Effect<void, NotFound | Unavailable, HistoryViews> =>
  Effect.flatMap(sees(caller, thread), (ok) => (ok ? Effect.void : Effect.fail(new NotFound({ message: `${what} not found` }))))
