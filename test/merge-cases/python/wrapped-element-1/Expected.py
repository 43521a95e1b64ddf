import functools


class PriceList:
    def __init__(self, rows):
        self.rows = rows

    @functools.cache
    def price(self, sku, default=None):
        for row in self.rows:
            if row.sku == sku:
                return row.price
        raise KeyError(sku)

    def skus(self):
        return [row.sku for row in self.rows]
