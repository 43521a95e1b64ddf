/**
 * `@forkjoin/cluster`: children on many machines. Runners join a cluster (effect's cluster over
 * SQL storage: PostgreSQL for several machines, SQLite for one) and run children; the parent
 * ships each runner the run's baseline as content-addressed manifests and blobs, and joins what
 * comes back on its own machine through the engine.
 *
 * @since 0.1.0
 */
export {}
