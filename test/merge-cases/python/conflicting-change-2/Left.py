def weighted_total(rows, weight):
    total = 0
    for row in rows:
        total += round(row.amount * weight, 2)
    return total
