"""The variables every Verdict run passes to its container."""
import os


def test_ci_is_true():
    assert os.environ.get("CI") == "true"


def test_framework_agnostic_is_true():
    assert os.environ.get("FRAMEWORK_AGNOSTIC") == "true"


def test_base_url_is_an_http_url():
    assert os.environ.get("BASE_URL", "").startswith(("http://", "https://"))
