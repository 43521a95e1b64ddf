/**
 * What the history store's contracts share: a suite whose tests each get a fresh store from the
 * layer under test, its four services, a failure's reason and message, applying one planned
 * change, and seeded text.
 */
import { HistoryContent, HistoryIdentityStore, HistoryJournal, HistoryRecords, type StoreError } from "@forkjoin/history/HistoryStore"
import { describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { planned } from "./fixtures.ts"

/** The commit time the contracts record at. */
export const MILLIS = Date.parse("2026-11-29T12:34:56.789Z")

/**
 * A contract's suite: `tests` declares its tests with `test`, an `it.effect` whose body runs on
 * a fresh store built by `makeLayer`.
 */
export const suite = <R>(
  title: string,
  makeLayer: () => Layer.Layer<R, unknown>,
  tests: (test: (title: string, body: () => Effect.Effect<void, unknown, R | Scope.Scope>) => void) => void
): void => {
  describe(title, () => tests((name, body) => it.effect(name, () => body().pipe(Effect.provide(makeLayer())))))
}

/** The layer every contract runs over: the store's four services. */
export type StoreLayer = Layer.Layer<HistoryContent | HistoryJournal | HistoryRecords | HistoryIdentityStore, unknown>

/** The four services of the store under test (a test takes the ones it uses). */
export const services = Effect.gen(function*() {
  return {
    content: yield* HistoryContent,
    journal: yield* HistoryJournal,
    records: yield* HistoryRecords,
    identity: yield* HistoryIdentityStore
  }
})

/** The reason and message a store call fails with. */
export const failureOf = <A>(effect: Effect.Effect<A, StoreError>) =>
  Effect.flip(effect).pipe(Effect.map((e) => ({ reason: e.reason, message: e.message })))

/** Opens and commits one planned change; returns its record. */
export const apply = (p: ReturnType<typeof planned>, millis = MILLIS) =>
  Effect.gen(function*() {
    const { journal } = yield* services
    yield* journal.openIntent(p.intent, p.blobs)
    return yield* journal.commitIntent(p.intent.intentId, p.draft, millis)
  })

/** Seeded lines of text, `n` of them. */
export const lines = (seed: number, n: number) =>
  Array.from({ length: n }, (_, i) => `line ${i} of ${seed}: ${(Math.imul(i + 1, 2654435761) ^ seed) >>> 0}\n`).join("")
