/**
 * `@forkjoin/cluster`: children on many machines. Runners join a cluster (effect's cluster over
 * SQL storage: PostgreSQL for several machines, SQLite for one) and run children; the parent
 * ships each runner the run's baseline as content-addressed manifests and blobs, and joins what
 * comes back on its own machine through the engine.
 *
 * @since 0.1.0
 */
export * as Baseline from "./Baseline.ts"
export * as ChangesetWire from "./ChangesetWire.ts"
export * as ClusterAuth from "./ClusterAuth.ts"
export * as ClusterStorage from "./ClusterStorage.ts"
export * as ClusterUrl from "./ClusterUrl.ts"
export * as Manifest from "./Manifest.ts"
export * as ObjectClient from "./ObjectClient.ts"
export * as ObjectServer from "./ObjectServer.ts"
export * as Objects from "./Objects.ts"
export * as Runner from "./Runner.ts"
export * as Sharding from "./Sharding.ts"
export * as Whereami from "./Whereami.ts"
export * as ChildAttempt from "./ChildAttempt.ts"
export * as Parent from "./Parent.ts"
export * as RemoteBase from "./RemoteBase.ts"
export * as JoinWorkflow from "./JoinWorkflow.ts"
export * as JoinState from "./JoinState.ts"
