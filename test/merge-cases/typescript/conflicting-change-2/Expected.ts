import type { Brand } from "../util/Brand.ts"
import { isoDate } from "../util/dates.ts"
import type { Money } from "../money/Money.ts"

export type CustomerId = Brand<string, "CustomerId">

export enum OrderStatus {
  Draft = "draft",
  Placed = "placed",
  Paid = "paid",
  Shipped = "shipped",
  Cancelled = "cancelled",
}

export interface OrderLine {
  readonly sku: string
  readonly quantity: bigint
  readonly price: Money
}

export interface Order {
  readonly id: string
  readonly customerId: CustomerId
  readonly status: OrderStatus
  readonly lines: ReadonlyArray<OrderLine>
  readonly createdAt: string
}

export type OrderEvent =
  | { readonly kind: "placed"; readonly orderId: string }
  | { readonly kind: "paid"; readonly orderId: string; readonly amount: Money }
  | { readonly kind: "shipped"; readonly orderId: string; readonly carrier: string }

export const statusLabels = {
  draft: "Draft",
  placed: "Placed",
  paid: "Paid",
  shipped: "Shipped",
  cancelled: "Cancelled",
}

export const describeOrder = (order: Order): string =>
  `${order.id} (${statusLabels[order.status]}) since ${isoDate(order.createdAt)}`
