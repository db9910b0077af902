"""Stand-ins for UI checks: no browser here, only pure functions."""
import html

import pytest


@pytest.mark.parametrize("text", ["<b>runs</b>", "a & b", "plain"])
def test_escaping_round_trips(text):
    assert html.unescape(html.escape(text)) == text


def test_title_is_escaped():
    assert html.escape("<title>") == "&lt;title&gt;"
