import { setTimeout as sleep } from "node:timers/promises"
import { connect } from "./broker.mjs"
import { decode } from "./codec.mjs"

const defaults = {
  concurrency: 4,
  retryDelayMs: 250,
  maxRetries: 5,
  queue: "jobs",
}

export class Worker {
  #running = false

  constructor(handlers, options = {}) {
    this.handlers = handlers
    this.options = { ...defaults, ...options }
  }

  async start() {
    this.#running = true
    this.channel = await connect(this.options.queue)
    while (this.#running) {
      const message = await this.channel.next()
      await this.handle(decode(message))
    }
  }

  async handle(job) {
    const handler = this.handlers[job.type]
    if (handler === undefined) throw new Error(`no handler for ${job.type}`)
    for (let attempt = 0; attempt <= this.options.maxRetries; attempt++) {
      try {
        return await handler(job.payload)
      } catch (error) {
        await sleep(this.options.retryDelayMs * 2 ** attempt)
      }
    }
  }

  stop() {
    this.#running = false
  }
}
