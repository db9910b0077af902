import pytest

from shop import parse_order_id, total


def test_total_of_two_items():
    assert total(["mug", "shirt"]) == 3700


def test_discount_is_applied():
    # Fails on purpose, with pytest's expected/actual comparison.
    assert total(["mug"], discount_cents=200) == 1100


def test_order_id_from_the_confirmation_mail():
    # Fails on purpose: the product code raises ValueError.
    assert parse_order_id("ORD-17") == 17


@pytest.mark.skip(reason="gift cards are not built yet")
def test_gift_card():
    pass
