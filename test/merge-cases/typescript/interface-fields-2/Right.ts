import { EventEmitter } from "node:events"
import type { Logger } from "../log/Logger.ts"

export enum EvictionPolicy {
  LeastRecentlyUsed = "lru",
  LeastFrequentlyUsed = "lfu",
  FirstInFirstOut = "fifo",
}

export interface CacheOptions {
  readonly maxEntries: number
  readonly ttlMs: number
  readonly namespace?: string
  readonly policy: EvictionPolicy
}

export type CacheEvent =
  | { readonly type: "hit"; readonly key: string }
  | { readonly type: "miss"; readonly key: string }
  | { readonly type: "evict"; readonly key: string; readonly reason: "size" | "ttl" }

export class CacheStore<V> extends EventEmitter {
  private readonly entries = new Map<string, { value: V; expires: number }>()

  constructor(
    private readonly options: CacheOptions,
    private readonly logger: Logger,
  ) {
    super()
  }

  get(key: string): V | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined || entry.expires < Date.now()) {
      this.emit("event", { type: "miss", key })
      return undefined
    }
    this.emit("event", { type: "hit", key })
    return entry.value
  }

  set(key: string, value: V): void {
    this.entries.set(key, { value, expires: Date.now() + this.options.ttlMs })
    this.logger.debug(`cache set ${key}`)
  }

  get size(): number {
    return this.entries.size
  }
}
