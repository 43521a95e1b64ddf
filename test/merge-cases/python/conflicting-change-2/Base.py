def weighted_total(rows, weight):
    total = 0
    for row in rows:
        total += row.amount * weight
    return total
