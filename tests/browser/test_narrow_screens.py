"""The console at 800 px wide: no page scrolls sideways, long values wrap inside their cells
(between letters only when a word is longer than the cell) and keep their whole text on hover."""

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PAGES = ["/", "/messages/", "/groups/", "/queues/", "/requests/", "/messages/order-1/"]


def test_every_main_screen_fits_800_pixels(personas, refused, tab):
    page = tab.page
    page.set_viewport_size({"width": 800, "height": 700})
    tab.login("operator")
    for path in PAGES:
        tab.goto(path)
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, (path, overflow)

    tab.goto("/messages/")
    reason = page.locator("#message-table td.reason").first
    assert reason.get_attribute("title") == "permanent failure: missing field: customer"
    assert not tab.csp_violations and not tab.errors
