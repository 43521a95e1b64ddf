import express from "express"
import { requireUser } from "./auth.js"
import { listOrders, getOrder } from "../orders/queries.js"
import { logger } from "../log.js"

export const routeOptions = {
  prefix: "/api",
  rateLimit: 100,
  caseSensitive: false,
  strict: true,
  mergeParams: true,
  timeoutMs: 30000,
}

export class OrderRouter {
  constructor(db) {
    this.db = db
    this.router = express.Router(routeOptions)
  }

  mount(app) {
    this.router.get("/orders", requireUser, (req, res) => this.list(req, res))
    this.router.get("/orders/:id", requireUser, (req, res) => this.show(req, res))
    app.use(routeOptions.prefix, this.router)
  }

  async list(req, res) {
    const orders = await listOrders(this.db, req.user.id)
    res.json({ orders })
  }

  async show(req, res) {
    const order = await getOrder(this.db, req.params.id)
    if (!order) {
      res.status(404).json({ error: "not_found" })
      return
    }
    res.json(order)
  }
}

logger.info("order routes loaded")
