import os

from shop import PRICES


def test_every_product_has_a_price():
    assert all(p > 0 for p in PRICES.values())


def test_runs_in_ci():
    # Verdict's contract: CI=true in every run.
    assert os.environ.get("CI") == "true"
