def weighted_total(rows, weight):
    total = Decimal(0)
    for row in sorted(rows, key=by_date):
        total += row.amount * weight
    return total
