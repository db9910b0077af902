"""The "product" the recipe's tests check: a tiny shop."""

PRICES = {"mug": 1200, "shirt": 2500}


def parse_order_id(text):
    """Order ids are numbers; "ORD-17" raises ValueError, as a real bug would."""
    return int(text)


def total(items, discount_cents=0):
    return sum(PRICES[i] for i in items) - discount_cents
