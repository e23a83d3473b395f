/** The order domain: events, and the two perspectives kept from them. */
import { EventDefinition, EventRegistry, Perspective } from "whizbang"
import { Schema } from "effect"

export const OrderCreated = EventDefinition.make("OrderCreated", {
  payload: Schema.Struct({ orderId: Schema.String, customerId: Schema.String }),
  streamId: (p) => p.orderId
})
export const ItemAdded = EventDefinition.make("ItemAdded", {
  payload: Schema.Struct({ orderId: Schema.String, sku: Schema.String, quantity: Schema.Int, unitPrice: Schema.Number }),
  streamId: (p) => p.orderId
})
export const OrderPaid = EventDefinition.make("OrderPaid", {
  payload: Schema.Struct({ orderId: Schema.String, customerId: Schema.String, amount: Schema.Number }),
  streamId: (p) => p.orderId
})
/** Written to the customer's own stream when one of their orders is paid. */
export const CustomerCharged = EventDefinition.make("CustomerCharged", {
  payload: Schema.Struct({ customerId: Schema.String, orderId: Schema.String, amount: Schema.Number }),
  streamId: (p) => p.customerId
})

export const events = EventRegistry.make([OrderCreated, ItemAdded, OrderPaid, CustomerCharged])

const Line = Schema.Struct({ sku: Schema.String, quantity: Schema.Int, unitPrice: Schema.Number })
export const OrderSummary = Schema.Struct({
  orderId: Schema.String,
  customerId: Schema.String,
  items: Schema.Array(Line),
  total: Schema.Number,
  status: Schema.Literals(["open", "paid"])
})
export type OrderSummary = typeof OrderSummary.Type

export const orderSummary = Perspective.make({
  name: "order_summary",
  events: [OrderCreated, ItemAdded, OrderPaid],
  model: OrderSummary,
  initial: { orderId: "", customerId: "", items: [], total: 0, status: "open" },
  apply: {
    OrderCreated: (_, { payload: p }) => ({ orderId: p.orderId, customerId: p.customerId, items: [], total: 0, status: "open" }),
    ItemAdded: (m, { payload: p }) => ({
      ...m,
      items: [...m.items, { sku: p.sku, quantity: p.quantity, unitPrice: p.unitPrice }],
      total: m.total + p.quantity * p.unitPrice
    }),
    OrderPaid: (m) => ({ ...m, status: "paid" })
  }
})

export const CustomerStats = Schema.Struct({ customerId: Schema.String, ordersPaid: Schema.Int, totalSpent: Schema.Number })
export const customerStats = Perspective.make({
  name: "customer_stats",
  events: [CustomerCharged],
  model: CustomerStats,
  initial: { customerId: "", ordersPaid: 0, totalSpent: 0 },
  apply: {
    CustomerCharged: (m, { payload: p }) => ({
      customerId: p.customerId,
      ordersPaid: m.ordersPaid + 1,
      totalSpent: m.totalSpent + p.amount
    })
  }
})

export const perspectives = [orderSummary, customerStats]
