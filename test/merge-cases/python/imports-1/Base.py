from __future__ import annotations

import datetime as dt
from decimal import Decimal

from .models import Invoice, LineItem
from .tax import tax_rate

DEFAULT_TERMS = {
    "net_days": 30,
    "currency": "EUR",
    "late_fee_percent": Decimal("1.5"),
    "reminders": 2,
}


class InvoiceService:
    """Creates, totals and closes invoices."""

    def __init__(self, repository, clock=dt.datetime.now):
        self.repository = repository
        self.clock = clock

    def create(self, customer_id, lines):
        invoice = Invoice(customer_id=customer_id, lines=list(lines), issued_at=self.clock())
        self.repository.add(invoice)
        return invoice

    def total(self, invoice):
        subtotal = sum((line.amount for line in invoice.lines), Decimal(0))
        return subtotal * (1 + tax_rate(invoice.country))

    def due_date(self, invoice):
        return invoice.issued_at + dt.timedelta(days=DEFAULT_TERMS["net_days"])

    def close(self, invoice):
        invoice.closed_at = self.clock()
        self.repository.save(invoice)
