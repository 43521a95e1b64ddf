import { randomUUID } from "node:crypto"
import type { Clock } from "../time/Clock.ts"
import { Money } from "../money/Money.ts"
import type { OrderRepository } from "./OrderRepository.ts"
import { OrderNotFound } from "./errors.ts"

export const orderDefaults = {
  currency: "EUR",
  maxLines: 200,
  reserveMinutes: 15,
  allowBackorder: false,
}

export class OrderService {
  private readonly pending = new Map<string, Money>()

  constructor(
    private readonly repository: OrderRepository,
    private readonly clock: Clock,
  ) {}

  async create(customerId: string): Promise<string> {
    const id = randomUUID()
    await this.repository.insert({ id, customerId, createdAt: this.clock.now() })
    return id
  }

  async total(id: string): Promise<Money> {
    const order = await this.repository.find(id)
    if (order === undefined) throw new OrderNotFound(id)
    return order.lines.reduce((sum, line) => sum.add(line.price), Money.zero(orderDefaults.currency))
  }

  async cancel(id: string): Promise<void> {
    const order = await this.repository.find(id)
    if (order === undefined) throw new OrderNotFound(id)
    this.pending.delete(order.id)
    await this.repository.update(id, { status: "cancelled", cancelledAt: this.clock.now() })
  }

  hasPending(id: string): boolean {
    return this.pending.has(id)
  }
}
